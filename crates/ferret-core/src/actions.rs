//! What an answer tells its reader to do, as data an agent can act on: the first step, version
//! changes, file changes and commands, each naming the hit it was read from.

use serde::{Deserialize, Serialize};

use crate::HitId;

/// The actions an answer states.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Actions {
    /// The one thing to do first, in a few words ("upgrade Spring Boot to 2.5").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    /// Components to move to another version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub version_changes: Vec<VersionChange>,
    /// Files to change, and how.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_changes: Vec<FileChange>,
    /// Commands to run, as the sources write them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandAction>,
    /// How sure the extraction is, in 0..1.
    pub confidence: f64,
}

impl Actions {
    /// True when no action was found.
    pub fn is_empty(&self) -> bool {
        self.version_changes.is_empty() && self.file_changes.is_empty() && self.commands.is_empty()
    }
}

/// A component to move to a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VersionChange {
    /// What to change ("Spring Boot").
    pub component: String,
    /// The version to move to ("2.7.18", "3.x").
    pub version: String,
    /// The hit that says so.
    pub source: HitId,
}

/// A file to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FileChange {
    /// The file ("pom.xml").
    pub file: String,
    /// What to change in it, as the source says.
    pub change: String,
    /// The hit that says so.
    pub source: HitId,
}

/// A command to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CommandAction {
    /// The command, exactly as the source writes it ("mvn clean install -U").
    pub command: String,
    /// The hit that says so.
    pub source: HitId,
}
