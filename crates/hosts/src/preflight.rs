//! Preflight checks (`toolgate doctor`, and the first step of `toolgate install`).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    /// Worth knowing, not a problem (e.g. hyperlight unusable while monty works).
    Note,
    Problem,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub level: Level,
    pub detail: String,
}

impl Check {
    pub fn new(name: impl Into<String>, level: Level, detail: impl Into<String>) -> Self {
        Check {
            name: name.into(),
            level,
            detail: detail.into(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn push(&mut self, check: Check) {
        self.checks.push(check);
    }

    pub fn problems(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.level == Level::Problem)
    }

    pub fn has_problems(&self) -> bool {
        self.problems().next().is_some()
    }

    /// One line per check, for a person.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for c in &self.checks {
            let tag = match c.level {
                Level::Ok => "ok     ",
                Level::Note => "note   ",
                Level::Problem => "PROBLEM",
            };
            let _ = writeln!(s, "{tag} {}: {}", c.name, c.detail);
        }
        let n = self.problems().count();
        if n == 0 {
            s.push_str("no problems found\n");
        } else {
            let _ = writeln!(s, "{n} problem(s) found");
        }
        s
    }
}

/// Whether files can be created in `dir` (or, if it does not exist yet, in its nearest existing
/// ancestor): a probe file is created and removed.
pub fn check_writable(name: &str, dir: &Path) -> Check {
    let mut probe_dir = dir;
    while !probe_dir.exists() {
        match probe_dir.parent() {
            Some(p) => probe_dir = p,
            None => break,
        }
    }
    if !probe_dir.is_dir() {
        return Check::new(
            name,
            Level::Problem,
            format!("{} is not a directory", probe_dir.display()),
        );
    }
    let probe = probe_dir.join(format!(".toolgate-write-probe-{}", std::process::id()));
    // A new empty file: nothing left at the name, file or link, is written through.
    match toolgate_fs::open::create_new(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Check::new(name, Level::Ok, format!("{} is writable", dir.display()))
        }
        Err(e) => Check::new(
            name,
            Level::Problem,
            format!(
                "cannot write in {} ({e}); choose another --target or fix the permissions",
                probe_dir.display()
            ),
        ),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn writable_and_rendering() {
        let d = tempfile::tempdir().unwrap();
        let c = check_writable("target", &d.path().join("not/yet"));
        assert_eq!(c.level, Level::Ok, "{c:?}");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0, "probe removed");
        let f = d.path().join("file");
        fs::write(&f, "x").unwrap();
        assert_eq!(check_writable("target", &f).level, Level::Problem);
        let mut r = Report::default();
        r.push(c);
        assert!(!r.has_problems());
        r.push(Check::new(
            "backend",
            Level::Problem,
            "hyperlight: /dev/kvm missing",
        ));
        assert!(
            r.render()
                .contains("PROBLEM backend: hyperlight: /dev/kvm missing")
        );
        assert!(r.render().ends_with("1 problem(s) found\n"));
    }
}
