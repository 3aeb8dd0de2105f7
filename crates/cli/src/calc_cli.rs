//! `toolgate calc`: Debrief's catalogue tools on catalogue-style inputs, and the debrief-calc
//! one-shot stdio protocol.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  toolgate calc range-calc input.json -p units=nm\n  toolgate calc --list\n  echo '{\"tool\":\"range-calc\",\"features\":[…],\"params\":{}}' | toolgate calc --stdio\n\nExit status: 0 when a ToolResponse was printed (also a tool's own error response), 2 for a usage error (unknown tool, unreadable input)."
)]
pub struct CalcArgs {
    /// The catalogue tool id, e.g. range-calc, trim-track (see --list).
    #[arg(required_unless_present_any = ["stdio", "list"])]
    pub tool: Option<String>,
    /// The input: a FeatureCollection (optionally with `_parameters`) or {features, …params};
    /// read from stdin when absent or `-`.
    pub file: Option<PathBuf>,
    /// Override or add a parameter: NAME=VALUE (VALUE parsed as JSON, else taken as a string).
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Answer one debrief-calc stdio request ({tool, features, params}) from stdin.
    #[arg(long, conflicts_with_all = ["tool", "file", "params", "list"])]
    pub stdio: bool,
    /// List the catalogue tools toolgate implements (id, result type, spec id and version).
    #[arg(long, conflicts_with_all = ["tool", "file", "params"])]
    pub list: bool,
    /// Pretty-print the JSON.
    #[arg(long)]
    pub pretty: bool,
}

fn read_input(file: Option<&PathBuf>) -> Result<String> {
    let mut text = String::new();
    match file.filter(|f| f.as_os_str() != "-") {
        Some(f) => {
            text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read the input file {}", f.display()))?;
        }
        None => {
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the input from stdin")?;
        }
    }
    Ok(text)
}

fn print(value: &serde_json::Value, pretty: bool) -> Result<()> {
    let text = if pretty {
        serde_json::to_string_pretty(value)?
    } else {
        value.to_string()
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

pub fn calc(args: &CalcArgs) -> Result<i32> {
    if args.list {
        let list: Vec<serde_json::Value> = toolgate_native_tools::catalogue::entries()
            .map(|e| {
                serde_json::json!({
                    "id": e.id,
                    "resultType": e.output_kind,
                    "specId": format!("{}/{}", e.spec_category, e.id),
                    "specVersion": e.spec_version,
                })
            })
            .collect();
        print(&serde_json::Value::Array(list), args.pretty)?;
        return Ok(0);
    }
    if let Some(tool) = args.tool.as_deref()
        && toolgate_native_tools::catalogue::entry(tool).is_none()
    {
        eprintln!(
            "error: unknown tool \"{tool}\"; `toolgate calc --list` lists the {} catalogue tools",
            toolgate_calc::tool_ids().len()
        );
        return Ok(2);
    }
    let text = match read_input(if args.stdio { None } else { args.file.as_ref() }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    let input: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) if args.stdio => {
            // The protocol has one channel: an unreadable request is an error response.
            let err = toolgate_native_tools::catalogue::ToolError::invalid(format!(
                "The request is not JSON ({e}); send {{\"tool\", \"features\", \"params\"}}"
            ));
            print(
                &serde_json::json!({"error": err.to_json(), "duration_ms": 0.0}),
                args.pretty,
            )?;
            return Ok(0);
        }
        Err(e) => {
            eprintln!("error: the input is not JSON: {e}");
            return Ok(2);
        }
    };
    if args.stdio {
        print(&toolgate_calc::stdio(&input), args.pretty)?;
        return Ok(0);
    }
    let tool = args.tool.as_deref().unwrap_or_default();
    match toolgate_calc::calc(tool, &input, &args.params) {
        Ok(response) => {
            print(&response, args.pretty)?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(2)
        }
    }
}
