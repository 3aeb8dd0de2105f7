#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Issue 19 item 3: VS Code's `mcp.json` is JSONC. Before the fix `install vscode` refused a file
//! with comments, and re-indented the user's file when it did accept it.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::Path;

use serde_json::json;
use toolgate_hosts::{
    Backend, Host, InstallOptions, Locations, ToolSet, apply, parse_jsonc, parse_manifest, plan,
    uninstall,
};

const MANIFEST: &str = include_str!("fixtures/codeact-tools.json");
const REFERENCE: &str = include_str!("fixtures/codeact-tools.md");
const USER_MCP: &str = include_str!("fixtures/vscode-mcp.jsonc");

fn locations(root: &Path) -> Locations {
    Locations {
        target: root.join("repo"),
        home: root.join("home"),
        data_dir: root.join("home/.local/share/toolgate"),
        vscode_user_dir: root.join("home/.config/Code/User"),
    }
}

fn options() -> InstallOptions {
    InstallOptions {
        host: Host::Vscode,
        global: false,
        backend: Backend::Monty,
        surface: ToolSet::All,
        exe: "/usr/local/bin/toolgate".to_owned(),
        tools: parse_manifest(MANIFEST).unwrap(),
        tools_reference: REFERENCE.to_owned(),
        hyperlight: false,
    }
}

#[test]
fn commented_mcp_json_survives_install_and_uninstall_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let loc = locations(tmp.path());
    let mcp = loc.target.join(".vscode/mcp.json");
    fs::create_dir_all(mcp.parent().unwrap()).unwrap();
    fs::write(&mcp, USER_MCP).unwrap();

    apply(&plan(&options(), &loc).unwrap()).unwrap();
    let installed = fs::read_to_string(&mcp).unwrap();
    let doc = parse_jsonc(&installed).unwrap();
    let entry = &doc["servers"]["toolgate"];
    assert_eq!(entry["type"], json!("stdio"));
    assert_eq!(entry["command"], json!("/usr/local/bin/toolgate"));
    assert_eq!(doc["servers"]["fetch"]["type"], json!("http"));
    assert_eq!(doc["inputs"][0]["id"], json!("perplexity-key"));
    // Exactly one run of bytes added, right after the last server's value (before its trailing
    // comma and the comments), indented with the file's tabs.
    let at = USER_MCP.rfind("\t\t},\n\t}").unwrap() + 3;
    let added = ",\n\t\t\"toolgate\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"/usr/local/bin/toolgate\",\n\t\t\t\"args\": [\n\t\t\t\t\"mcp\",\n\t\t\t\t\"--surface\",\n\t\t\t\t\"all\",\n\t\t\t\t\"--workspace\",\n\t\t\t\t\"${workspaceFolder}\"\n\t\t\t]\n\t\t}";
    assert_eq!(
        installed,
        format!("{}{added}{}", &USER_MCP[..at], &USER_MCP[at..])
    );

    // A second install changes nothing.
    let again = plan(&options(), &loc).unwrap();
    assert!(again.is_noop());

    let report = uninstall(Host::Vscode, false, &loc).unwrap();
    assert_eq!(report.restored, vec![mcp.clone()]);
    assert_eq!(fs::read_to_string(&mcp).unwrap(), USER_MCP);
}

#[test]
fn uninstall_after_user_edits_cuts_out_only_toolgates_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let loc = locations(tmp.path());
    let mcp = loc.target.join(".vscode/mcp.json");
    fs::create_dir_all(mcp.parent().unwrap()).unwrap();
    fs::write(&mcp, USER_MCP).unwrap();
    apply(&plan(&options(), &loc).unwrap()).unwrap();

    // The user adds a comment and a server after installing.
    let installed = fs::read_to_string(&mcp).unwrap();
    let edited = installed.replacen(
        "\t\"servers\": {\n",
        "\t\"servers\": {\n\t\t// mine, added later\n\t\t\"later\": { \"command\": \"x\" },\n",
        1,
    );
    assert_ne!(edited, installed);
    fs::write(&mcp, &edited).unwrap();

    let report = uninstall(Host::Vscode, false, &loc).unwrap();
    assert_eq!(report.restored, vec![mcp.clone()]);
    let expected = USER_MCP.replacen(
        "\t\"servers\": {\n",
        "\t\"servers\": {\n\t\t// mine, added later\n\t\t\"later\": { \"command\": \"x\" },\n",
        1,
    );
    assert_eq!(fs::read_to_string(&mcp).unwrap(), expected);
}
