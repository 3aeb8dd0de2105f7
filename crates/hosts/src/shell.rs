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

/// Which shells a command line must read the same in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// A POSIX shell (bash, zsh): quoting may be combined within a word, and a quoted
    /// here-document may carry the program.
    Posix,
    /// Any shell a terminal may run (bash, zsh, fish, PowerShell): each word is bare or one
    /// quoted string, single-quoted strings hold no backslash (fish escapes `\'` in them) and
    /// no typographic quote (PowerShell closes strings on them), no here-document.
    Neutral,
}

/// Characters a word may hold outside quotes in exclusive mode: none of them means anything to
/// any shell (no expansion, glob, brace, tilde, comment, escape, operator or splat).
fn bare_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./:=+-".contains(c)
}

/// Typographic quotes PowerShell takes for `'` and `"`.
fn typographic_quote(c: char) -> bool {
    matches!(c, '\u{2018}'..='\u{201E}')
}

/// Why a shell tool call is not one exact `toolgate exec` that exclusive mode allows (the deny
/// reason the model reads after "was blocked: ").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAllowed {
    #[error("the command holds a NUL character")]
    Nul,
    #[error(
        "`{word}` joins quoted and unquoted text in one word, which shells other than bash and zsh split differently"
    )]
    MixedQuoting { word: String },
    #[error(
        "a single-quoted string holds `{ch}`, which this tool's shell may read differently from bash (use toolgate's MCP run_code tool, or write the program without it)"
    )]
    SingleQuoted { ch: char },
    #[error("a double-quoted string holds `{ch}`, which the shell expands; use single quotes")]
    DoubleQuoted { ch: char },
    #[error("a quote is left open")]
    OpenQuote,
    #[error(
        "the here-document is not one literal program ending the command (use <<'EOF' … EOF and nothing after it)"
    )]
    HereDocument,
    #[error("the command has more than one line outside quotes")]
    SeveralLines,
    #[error(
        "`{}` outside quotes is shell syntax (a second command, a redirection, an expansion, a glob or an escape)",
        .ch.escape_debug()
    )]
    Syntax { ch: char },
    #[error("it is not `toolgate exec`")]
    NotExec,
    #[error(
        "`{program}` is not the installed toolgate binary{}",
        .installed.as_ref().map(|s| format!(" ({s})")).unwrap_or_default()
    )]
    OtherProgram {
        program: String,
        installed: Option<String>,
    },
    #[error("it runs `toolgate {subcommand}`, not `toolgate exec`")]
    OtherSubcommand { subcommand: String },
    #[error("`{word}` is not allowed in exclusive mode (allowed: {EXCLUSIVE_EXEC_OPTIONS})")]
    Option { word: String },
    #[error("`{option}` has no value")]
    NoValue { option: String },
    #[error(
        "`--workspace {value}` is not this project ({project}); exclusive mode runs programs on the project only"
    )]
    OtherWorkspace { value: String, project: String },
    #[error(
        "`{option} {value}` reads a file outside the sandbox; pass the program with --code or on stdin (-f -)"
    )]
    ProgramFile { option: String, value: String },
    #[error("`{option} {value}` is not a value exclusive mode allows")]
    Value { option: String, value: String },
    #[error("its argument `{key}` would run it in another directory or environment")]
    ContextArgument { key: String },
    #[error("its `{key}` is not a string")]
    CommandNotString { key: String },
    #[error("it has no command")]
    NoCommand,
}

/// Split a command line into words for exclusive mode, refusing everything a shell would
/// expand or treat as syntax: outside quotes only [`bare_char`]s and blanks; single-quoted text
/// as it is; double-quoted text without `$`, `` ` ``, `\\` or `!`; in [`Dialect::Posix`] also
/// a backslash-escaped character and a trailing here-document whose body the shell keeps
/// literal. Stricter than
/// [`simple_command`] on purpose: what is left has one reading in every shell, so the words
/// checked here are exactly the arguments `toolgate exec` gets.
///
/// # Errors
///
/// [`NotAllowed`]: what in `line` a shell would expand or treat as syntax.
pub fn strict_words(line: &str, dialect: Dialect) -> Result<Vec<String>, NotAllowed> {
    if line.contains('\0') {
        return Err(NotAllowed::Nul);
    }
    let neutral = dialect == Dialect::Neutral;
    let mut words = Vec::new();
    let mut cur = String::new();
    // Per word: whether it has bare characters, and how many quoted strings.
    let (mut in_word, mut bare, mut quoted) = (false, false, 0u32);
    let mut chars = line.char_indices().peekable();
    let end_word = |words: &mut Vec<String>, cur: &mut String, bare: bool, quoted: u32| {
        if neutral && (quoted > 1 || (quoted == 1 && bare)) {
            return Err(NotAllowed::MixedQuoting { word: cur.clone() });
        }
        words.push(std::mem::take(cur));
        Ok(())
    };
    while let Some((i, c)) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    end_word(&mut words, &mut cur, bare, quoted)?;
                    (in_word, bare, quoted) = (false, false, 0);
                }
            }
            '\'' => {
                (in_word, quoted) = (true, quoted + 1);
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, ch)) if neutral && (ch == '\\' || typographic_quote(ch)) => {
                            return Err(NotAllowed::SingleQuoted { ch });
                        }
                        Some((_, ch)) => cur.push(ch),
                        None => return Err(NotAllowed::OpenQuote),
                    }
                }
            }
            '"' => {
                (in_word, quoted) = (true, quoted + 1);
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, ch))
                            if matches!(ch, '$' | '`' | '\\' | '!')
                                || (neutral && typographic_quote(ch)) =>
                        {
                            return Err(NotAllowed::DoubleQuoted { ch });
                        }
                        Some((_, ch)) => cur.push(ch),
                        None => return Err(NotAllowed::OpenQuote),
                    }
                }
            }
            '<' if !neutral && matches!(chars.peek(), Some((_, '<'))) => {
                if in_word {
                    end_word(&mut words, &mut cur, bare, quoted)?;
                }
                return match heredoc(&line[i + 2..]) {
                    Some(()) => Ok(words),
                    None => Err(NotAllowed::HereDocument),
                };
            }
            // bash and zsh take the next character literally (`'\\''` puts a quote in a
            // single-quoted program); other shells do not.
            '\\' if !neutral && chars.peek().is_some_and(|(_, n)| *n != '\n') => {
                if let Some((_, n)) = chars.next() {
                    (in_word, bare) = (true, true);
                    cur.push(n);
                }
            }
            c if bare_char(c) => {
                (in_word, bare) = (true, true);
                cur.push(c);
            }
            '\n' => {
                return Err(NotAllowed::SeveralLines);
            }
            other => {
                return Err(NotAllowed::Syntax { ch: other });
            }
        }
    }
    if in_word {
        end_word(&mut words, &mut cur, bare, quoted)?;
    }
    Ok(words)
}

/// The options exclusive mode lets `toolgate exec` have, as the deny reason lists them.
pub const EXCLUSIVE_EXEC_OPTIONS: &str = "--code, -f - (or -) for a program on stdin, --workspace with this project, --raw, --backend, --timeout, --max-memory, --max-tool-calls, --plot";

/// Whether `dir` (a `--workspace` value) is the project: `.`, or the project's own absolute
/// path (trailing slashes aside). Nothing else: no `..`, no other spelling of the same folder.
fn is_project(dir: &str, project: Option<&str>) -> bool {
    let trim = |p: &str| -> String {
        let t = p.trim_end_matches('/');
        if t.is_empty() && p.starts_with('/') {
            "/".to_owned()
        } else {
            t.to_owned()
        }
    };
    if dir == "." || dir == "./" {
        return true;
    }
    project.is_some_and(|p| p.starts_with('/') && !dir.is_empty() && trim(dir) == trim(p))
}

/// Whether `command` is one exact `toolgate exec` that exclusive mode allows: split by
/// [`strict_words`] for `dialect`; the first word one of `spellings` (the installed binary's
/// absolute path and the spellings the CLI checked resolve to it); the second `exec`; then
/// only the options in [`EXCLUSIVE_EXEC_OPTIONS`], each value checked: `--workspace` must be
/// the project (`project`, the payload's cwd; `.`; or the option absent), a program file only
/// `-` (stdin: exec reads a named file itself, outside the sandbox, and echoes a line of it in a
/// SyntaxError, and a path checked here could be swapped for a link before exec opens it), no
/// `--yes` or `--save` (they approve edits for the user), no `--store` (another catalogue), no
/// `--in-process` (weaker limits).
pub fn exclusive_exec(
    command: &str,
    spellings: &[&str],
    project: Option<&str>,
    dialect: Dialect,
) -> Result<(), NotAllowed> {
    let words = strict_words(command.trim_matches([' ', '\t']), dialect)?;
    let [prog, sub, rest @ ..] = words.as_slice() else {
        return Err(NotAllowed::NotExec);
    };
    if !spellings.iter().any(|s| !s.is_empty() && s == prog) {
        return Err(NotAllowed::OtherProgram {
            program: prog.clone(),
            installed: spellings.first().map(|s| (*s).to_owned()),
        });
    }
    if sub != "exec" {
        return Err(NotAllowed::OtherSubcommand {
            subcommand: sub.clone(),
        });
    }
    let mut it = rest.iter();
    while let Some(word) = it.next() {
        let (opt, inline) = match word.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v)),
            _ => (word.as_str(), None),
        };
        if (opt == "--raw" && inline.is_none()) || opt == "-" {
            continue;
        }
        if !matches!(
            opt,
            "--code"
                | "--workspace"
                | "-f"
                | "--file"
                | "--backend"
                | "--timeout"
                | "--max-memory"
                | "--max-tool-calls"
                | "--plot"
        ) {
            return Err(NotAllowed::Option { word: word.clone() });
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .map(String::as_str)
                .ok_or_else(|| NotAllowed::NoValue {
                    option: opt.to_owned(),
                })?,
        };
        let number = |v: &str| {
            v.starts_with(|c: char| c.is_ascii_digit())
                && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        };
        let ok = match opt {
            "--code" => true,
            "--workspace" => is_project(value, project),
            "-f" | "--file" => value == "-",
            "--backend" => matches!(value, "auto" | "monty" | "hyperlight"),
            "--plot" => {
                !value.is_empty()
                    && !value.starts_with('-')
                    && value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c))
            }
            _ => number(value),
        };
        if !ok {
            let (option, value) = (opt.to_owned(), value.to_owned());
            return Err(match opt {
                "--workspace" => NotAllowed::OtherWorkspace {
                    value,
                    project: project.unwrap_or(".").to_owned(),
                },
                "-f" | "--file" => NotAllowed::ProgramFile { option, value },
                _ => NotAllowed::Value { option, value },
            });
        }
    }
    Ok(())
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
    fn exclusive_exec_is_exact() {
        let ok = |c: &str, d: Dialect| exclusive_exec(c, &[EXE], Some("/r"), d);
        for good in [
            "/opt/bin/toolgate exec --code 'print(1)'",
            "'/opt/bin/toolgate' exec --workspace /r/ --raw --code \"print('x')\"",
            "/opt/bin/toolgate exec --workspace=. --backend=monty --timeout 2.5 --code=x",
            "/opt/bin/toolgate exec --raw - <<'EOF'\nprint(\"$(id)\")\nEOF",
            "/opt/bin/toolgate exec --code 'a'\\''b'",
            "/opt/bin/toolgate\texec --code x",
            // One word, `x --yes`: the program's text, not a flag.
            "/opt/bin/toolgate exec --code x\\ --yes",
        ] {
            assert_eq!(ok(good, Dialect::Posix), Ok(()), "{good}");
        }
        for bad in [
            "/opt/bin/toolgate exec --code x --yes",
            "/opt/bin/toolgate exec --workspace /r/../etc --code x",
            "/opt/bin/toolgate exec --workspace '' --code x",
            "/opt/bin/toolgate exec --code x --workspace",
            "/opt/bin/toolgate exec -f -- -",
            "/opt/bin/toolgate exec --code x \\\n--yes",
            "/opt/bin/toolgate exec --code x --plot=-x",
            "/opt/bin/toolgate exec --code x --timeout=-1",
            "/opt/bin/toolgate exec --code \"x\\\"\" --yes",
            "/opt/bin/toolgate exec --code x\u{0}",
            "/opt/bin/toolgate exec --code x\u{a0}--yes",
            "/opt/bin/toolgate exec - <<EOF\n$(id)\nEOF",
            "/opt/bin/toolgate",
            "/opt/bin/toolgate tools list",
        ] {
            assert!(ok(bad, Dialect::Posix).is_err(), "{bad}");
        }
        // What reads differently outside bash and zsh is refused for other shells.
        for posix_only in [
            "/opt/bin/toolgate exec --code 'print(\"a\\nb\")'",
            "/opt/bin/toolgate exec --code 'a\u{2019} ; id ; \u{2018}b'",
            "/opt/bin/toolgate exec --code='x'",
            "/opt/bin/toolgate exec --code 'a''b'",
            "/opt/bin/toolgate exec --raw - <<'EOF'\nprint(1)\nEOF",
        ] {
            assert_eq!(ok(posix_only, Dialect::Posix), Ok(()), "{posix_only}");
            assert!(ok(posix_only, Dialect::Neutral).is_err(), "{posix_only}");
        }
        // Without a known project only `.` names it.
        assert!(
            exclusive_exec(
                "/opt/bin/toolgate exec --workspace /r --code 1",
                &[EXE],
                None,
                Dialect::Posix
            )
            .is_err()
        );
        assert!(
            exclusive_exec(
                "/opt/bin/toolgate exec --workspace . --code 1",
                &[EXE],
                None,
                Dialect::Posix
            )
            .is_ok()
        );
        // A relative project path is not trusted to name anything.
        assert!(
            exclusive_exec(
                "toolgate exec --workspace r --code 1",
                &["toolgate"],
                Some("r"),
                Dialect::Posix
            )
            .is_err()
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
