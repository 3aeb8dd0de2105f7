#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Issue 14 item 7: install and uninstall must not follow symbolic links out of the project.
//! A repository can ship `.github/plugin` or `.vscode` as a link to a folder elsewhere; before
//! the fix `uninstall copilot` deleted the files there and `install vscode` wrote `mcp.json`
//! through the link.
#![cfg(unix)]
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use toolgate_hosts::{
    Backend, Host, HostsError, InstallOptions, Locations, ToolSet, apply, parse_manifest, plan,
    uninstall,
};

const MANIFEST: &str = include_str!("fixtures/codeact-tools.json");
const REFERENCE: &str = include_str!("fixtures/codeact-tools.md");

fn locations(root: &Path) -> Locations {
    Locations {
        target: root.join("repo"),
        home: root.join("home"),
        data_dir: root.join("home/.local/share/toolgate"),
        vscode_user_dir: root.join("home/.config/Code/User"),
    }
}

fn options(host: Host) -> InstallOptions {
    InstallOptions {
        host,
        global: false,
        backend: Backend::Monty,
        surface: ToolSet::All,
        exe: "/usr/local/bin/toolgate".to_owned(),
        tools: parse_manifest(MANIFEST).unwrap(),
        tools_reference: REFERENCE.to_owned(),
        hyperlight: false,
    }
}

/// Every file below `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn uninstall_copilot_does_not_delete_through_a_symlinked_plugin_folder() {
    let dir = tempfile::tempdir().unwrap();
    let loc = locations(dir.path());
    fs::create_dir_all(&loc.target).unwrap();
    apply(&plan(&options(Host::Copilot), &loc).unwrap()).unwrap();
    // The attacker's layout: the plugin folder's files (identical to what toolgate wrote, so
    // their hashes match the receipt) live outside, and `.github/plugin` links there.
    let outside = dir.path().join("outside");
    fs::rename(loc.target.join(".github/plugin"), &outside).unwrap();
    symlink(&outside, loc.target.join(".github/plugin")).unwrap();
    let before = files(&outside);
    assert!(!before.is_empty());

    let err = uninstall(Host::Copilot, false, &loc).unwrap_err();
    assert!(matches!(err, HostsError::Symlink { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(".github/plugin is a symbolic link"),
        "{err}"
    );
    assert_eq!(files(&outside), before, "nothing outside was deleted");
}

#[test]
fn install_vscode_does_not_write_through_a_symlinked_dot_vscode() {
    let dir = tempfile::tempdir().unwrap();
    let loc = locations(dir.path());
    let outside = dir.path().join("outside");
    fs::create_dir_all(&loc.target).unwrap();
    fs::create_dir_all(&outside).unwrap();
    symlink(&outside, loc.target.join(".vscode")).unwrap();

    let err = plan(&options(Host::Vscode), &loc).unwrap_err();
    assert!(matches!(err, HostsError::Symlink { .. }), "{err}");
    assert!(files(&outside).is_empty(), "no mcp.json outside");
    // A link swapped in after planning is caught when applying.
    fs::remove_file(loc.target.join(".vscode")).unwrap();
    let p = plan(&options(Host::Vscode), &loc).unwrap();
    symlink(&outside, loc.target.join(".vscode")).unwrap();
    let err = apply(&p).unwrap_err();
    assert!(matches!(err, HostsError::Symlink { .. }), "{err}");
    assert!(files(&outside).is_empty(), "no mcp.json outside");
}

#[test]
fn a_linked_receipt_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let loc = locations(dir.path());
    let outside = dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(loc.target.join(".toolgate")).unwrap();
    symlink(&outside, loc.target.join(".toolgate/receipts")).unwrap();
    let err = plan(&options(Host::Claude), &loc).unwrap_err();
    assert!(matches!(err, HostsError::Symlink { .. }), "{err}");
    assert!(files(&outside).is_empty());
}
