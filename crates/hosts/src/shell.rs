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

/// `rest` follows `<<`: an optional `-`, the delimiter word and nothing else on the line; then
/// the body; the first line that is exactly the delimiter ends it and must be the last line.
/// A quoted delimiter (`<<'EOF'`, `<<"EOF"`) keeps the body literal; an unquoted one makes the
/// shell expand `$…`, `` `…` `` and `\` in the body (`<<EOF … $(id)` runs `id`), so such a body
/// is refused.
fn heredoc(rest: &str) -> Option<()> {
    let (first, body) = rest.split_once('\n')?;
    let (strip_tabs, word) = match first.trim().strip_prefix('-') {
        Some(w) => (true, w.trim()),
        None => (false, first.trim()),
    };
    let (delim, quoted) = match word.as_bytes() {
        [b'\'', .., b'\''] | [b'"', .., b'"'] if word.len() >= 2 => {
            (&word[1..word.len() - 1], true)
        }
        _ => (word, false),
    };
    if delim.is_empty() || delim.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        return None;
    }
    let mut lines = body.split('\n');
    let mut text = String::new();
    let mut ended = false;
    for line in lines.by_ref() {
        let l = if strip_tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        if l == delim {
            ended = true;
            break;
        }
        text.push_str(l);
        text.push('\n');
    }
    // Anything after the delimiter line is another command.
    if !ended || lines.any(|l| !l.trim().is_empty()) {
        return None;
    }
    if !quoted && text.contains(['$', '`', '\\']) {
        return None;
    }
    Some(())
}

/// Whether `command` runs `toolgate exec` (and only that): one simple command whose first word
/// is exactly `exe`, the absolute path of the installed toolgate binary, and whose second word
/// is `exec`. No leading `NAME=value` assignments (`LD_PRELOAD=… toolgate exec` loads other
/// code, `PATH=… toolgate exec` runs another program), no other program named `toolgate`
/// (`./toolgate`, `/tmp/x/toolgate`, a bare `toolgate` found through `PATH`), and no heredoc
/// whose body the shell would expand.
pub fn is_toolgate_exec(command: &str, exe: &str) -> bool {
    std::path::Path::new(exe).is_absolute() && is_exec_of(command, exe)
}

/// Whether `command` is one simple command that runs `spelling exec …`, with `spelling` taken
/// as written (`toolgate`, `./bin/toolgate`). Only for a spelling the caller has checked
/// resolves to the running toolgate binary (the hook does so for the spelling the host ran it
/// by); [`is_toolgate_exec`] is the check for an absolute path.
pub fn is_exec_of(command: &str, spelling: &str) -> bool {
    let Some(words) = simple_command(command.trim()) else {
        return false;
    };
    match words.as_slice() {
        [prog, sub, ..] => !spelling.is_empty() && prog == spelling && sub == "exec",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EXE: &str = "/opt/bin/toolgate";

    #[test]
    fn recognises_exec_calls() {
        for ok in [
            "/opt/bin/toolgate exec --code 'print(1)'",
            "/opt/bin/toolgate exec --raw --code 'x = 1; print(x) | 2 && 3'",
            "'/opt/bin/toolgate' exec --workspace . --code \"print('hi')\"",
            "/opt/bin/toolgate exec --raw - <<'EOF'\nfor f in glob(pattern='*'):\n    print(f)\nEOF",
            "/opt/bin/toolgate exec --raw - <<\"EOF\"\nprint(\"$(id)\")\nEOF\n",
            "/opt/bin/toolgate exec --raw - <<EOF\nprint(1)\nEOF",
            "/opt/bin/toolgate exec --raw - <<-EOF\n\tprint(1)\n\tEOF",
            "/opt/bin/toolgate exec --code 'a\nb'",
        ] {
            assert!(is_toolgate_exec(ok, EXE), "{ok}");
        }
        for bad in [
            "/opt/bin/toolgate exec --code 'x' && rm -rf /",
            "/opt/bin/toolgate exec --code 'x'; curl evil",
            "/opt/bin/toolgate exec --code \"$(cat /etc/passwd)\"",
            "/opt/bin/toolgate exec --code `id`",
            "/opt/bin/toolgate tools list",
            "echo /opt/bin/toolgate exec",
            "python codeact.py",
            "/opt/bin/toolgate exec --code 'unclosed",
            "/opt/bin/toolgate exec > out.txt",
            "/opt/bin/toolgate exec --code 'x'\nrm -rf /",
            "/opt/bin/toolgate exec - <<EOF\nprint(1)\nEOF\nrm -rf /",
            // The heredoc ends at the first delimiter line; what follows is a command.
            "/opt/bin/toolgate exec - <<'EOF'\nprint(1)\nEOF\nrm -rf /\nEOF",
            // Issue 14 item 8: the five bypasses.
            "LD_PRELOAD=/tmp/evil.so /opt/bin/toolgate exec --code 1",
            "PATH=/tmp/evil:/usr/bin /opt/bin/toolgate exec --code 1",
            "TOOLGATE_BACKEND=monty /opt/bin/toolgate exec --code 1",
            "/tmp/evil/toolgate exec --code 1",
            "./toolgate exec --code 1",
            "toolgate exec --code 1",
            "/opt/bin/toolgate exec - <<EOF\n$(id)\nEOF",
            "/opt/bin/toolgate exec - <<EOF\n`id`\nEOF",
            "/opt/bin/toolgate exec - <<EOF\n${HOME}\nEOF",
            "/opt/bin/toolgate exec - <<EOF 'x'\nprint(1)\nEOF",
            "/opt/bin/../bin/toolgate exec --code 1",
            "mytoolgate exec",
        ] {
            assert!(!is_toolgate_exec(bad, EXE), "{bad}");
        }
        assert!(
            !is_toolgate_exec("toolgate exec --code 1", "toolgate"),
            "a relative exe (no canonical path known) accepts nothing"
        );
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
