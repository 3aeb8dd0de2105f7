//! Shell words: quoting for the rendered command lines, and recognising a shell command that
//! runs `toolgate exec` and nothing else (what exclusive mode lets through).

/// Quote `s` for a POSIX shell when it needs it (single quotes, `'\''` for a quote).
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Split one command line into words, following POSIX quoting. `None` when the line is more
/// than one simple command (an unquoted `;`, `&`, `|`, backquote, `$(`, `(`, `)`, `<`, `>` or
/// a newline), or when a quote is left open. A here-document (`<<'EOF'`) is allowed when it is
/// the last thing on the first line and the rest of the text is its body and delimiter.
pub fn simple_command(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, ch)) => cur.push(ch),
                        None => return None,
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, ch)) if "$`\"\\\n".contains(ch) => {
                                if ch != '\n' {
                                    cur.push(ch);
                                }
                            }
                            Some((_, ch)) => {
                                cur.push('\\');
                                cur.push(ch);
                            }
                            None => return None,
                        },
                        // Command substitution inside double quotes runs a command.
                        Some((_, '`')) => return None,
                        Some((_, '$')) if matches!(chars.peek(), Some((_, '('))) => return None,
                        Some((_, ch)) => cur.push(ch),
                        None => return None,
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, ch)) => {
                    in_word = true;
                    cur.push(ch);
                }
                None => return None,
            },
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '<' if matches!(chars.peek(), Some((_, '<'))) => {
                chars.next();
                if in_word {
                    words.push(std::mem::take(&mut cur));
                }
                return heredoc(&line[i + 2..]).map(|()| words);
            }
            ';' | '&' | '|' | '`' | '(' | ')' | '<' | '>' | '\n' => return None,
            '$' if matches!(chars.peek(), Some((_, '('))) => return None,
            _ => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// `rest` follows `<<`: an optional `-`, the delimiter word (possibly quoted) and nothing else on
/// the line; then the body; the last non-empty line is the delimiter.
fn heredoc(rest: &str) -> Option<()> {
    let (first, body) = rest.split_once('\n')?;
    let word = first.trim().trim_start_matches('-').trim();
    let delim = word.trim_matches(|c| c == '\'' || c == '"');
    if delim.is_empty() || delim.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        return None;
    }
    let last = body.trim_end_matches('\n').rsplit('\n').next()?;
    (last.trim() == delim).then_some(())
}

/// Whether `command` runs `toolgate exec` (and only that): the first word after any
/// `NAME=value` assignments is a program named `toolgate` (any directory), the next is `exec`.
pub fn is_toolgate_exec(command: &str) -> bool {
    let Some(words) = simple_command(command.trim()) else {
        return false;
    };
    let mut it = words
        .iter()
        .skip_while(|w| is_assignment(w))
        .map(String::as_str);
    let prog = it.next().unwrap_or("");
    let base = prog.rsplit(['/', '\\']).next().unwrap_or(prog);
    let base = base.strip_suffix(".exe").unwrap_or(base);
    base == "toolgate" && it.next() == Some("exec")
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn recognises_exec_calls() {
        for ok in [
            "toolgate exec --code 'print(1)'",
            "/opt/bin/toolgate exec --raw --code 'x = 1; print(x) | 2 && 3'",
            "'/home/a b/toolgate' exec --workspace . --code \"print('hi')\"",
            "TOOLGATE_BACKEND=monty toolgate exec --code 'print(1)'",
            "toolgate exec --raw - <<'EOF'\nfor f in glob(pattern='*'):\n    print(f)\nEOF",
            "toolgate exec --code 'a\nb'",
        ] {
            assert!(is_toolgate_exec(ok), "{ok}");
        }
        for bad in [
            "toolgate exec --code 'x' && rm -rf /",
            "toolgate exec --code 'x'; curl evil",
            "toolgate exec --code \"$(cat /etc/passwd)\"",
            "toolgate exec --code `id`",
            "toolgate tools list",
            "echo toolgate exec",
            "python codeact.py",
            "toolgate exec --code 'unclosed",
            "toolgate exec > out.txt",
            "toolgate exec --code 'x'\nrm -rf /",
            "toolgate exec - <<EOF\nprint(1)\nEOF\nrm -rf /",
            "mytoolgate exec",
        ] {
            assert!(!is_toolgate_exec(bad), "{bad}");
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("/usr/bin/toolgate"), "/usr/bin/toolgate");
        assert_eq!(quote("/a b/it's"), "'/a b/it'\\''s'");
        assert_eq!(quote(""), "''");
    }

    proptest! {
        #[test]
        fn quoted_words_split_back(words in proptest::collection::vec("[ -~\\n\\t]{0,12}", 1..5)) {
            let line: Vec<String> = words.iter().map(|w| quote(w)).collect();
            prop_assert_eq!(simple_command(&line.join(" ")), Some(words));
        }
    }
}
