//! Which of toolgate's two tool sets a caller wants.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which of toolgate's tool sets an MCP server serves, an installed host registers and
/// `toolgate tools list` lists: the Debrief tools, CodeAct (`run_code` and the sandbox
/// functions a program calls), or both. On the command line and in install receipts it is
/// still `--surface` / `"surface"`; the surface a call arrives by (exec, MCP `run_code`, MCP
/// direct) is `toolgate_codeact::Surface`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSet {
    /// The Debrief tools: the four agent tools over a session.
    Debrief,
    /// CodeAct: `run_code` and the sandbox functions.
    Codeact,
    /// Both.
    All,
}

/// A tool set name that is none of `debrief`, `codeact` or `all`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown surface \"{0}\": use debrief, codeact or all")]
pub struct UnknownToolSet(pub String);

impl ToolSet {
    /// Every tool set, in the order the command line lists them.
    pub const ALL: [ToolSet; 3] = [ToolSet::Debrief, ToolSet::Codeact, ToolSet::All];

    /// `debrief`, `codeact` or `all`, any case, surrounding blanks ignored.
    pub fn parse(text: &str) -> Result<Self, UnknownToolSet> {
        match text.trim().to_ascii_lowercase().as_str() {
            "debrief" => Ok(Self::Debrief),
            "codeact" => Ok(Self::Codeact),
            "all" => Ok(Self::All),
            other => Err(UnknownToolSet(other.to_owned())),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debrief => "debrief",
            Self::Codeact => "codeact",
            Self::All => "all",
        }
    }

    pub fn has_debrief(self) -> bool {
        matches!(self, Self::Debrief | Self::All)
    }

    pub fn has_codeact(self) -> bool {
        matches!(self, Self::Codeact | Self::All)
    }
}

impl fmt::Display for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ToolSet {
    type Err = UnknownToolSet;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_text_and_json() {
        for t in ToolSet::ALL {
            assert_eq!(ToolSet::parse(t.as_str()), Ok(t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert_eq!(ToolSet::parse(" ALL "), Ok(ToolSet::All));
        assert_eq!(
            ToolSet::parse("Both").unwrap_err().to_string(),
            "unknown surface \"both\": use debrief, codeact or all"
        );
    }
}
