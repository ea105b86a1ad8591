//! The results of a run, as `measure` fills them and `report` prints them:
//! per scenario, one row per tool and extraction variant with its samples.

use corpora::Shape;

use crate::process::Sample;
use crate::tools::{Extract, Tool};

/// One row of the results: a tool with one way of extracting.
pub struct Row {
    pub tool: Tool,
    pub how: Extract,
    pub label: &'static str,
    pub size: u64,
    /// Empty for a second extraction variant (it uses the first's archive).
    pub create: Vec<Sample>,
    pub extract: Vec<Sample>,
}

/// One scenario's corpus, rows and notes (tools skipped or failed).
pub struct ScenarioReport {
    pub name: String,
    pub shape: Shape,
    pub logical_bytes: u64,
    pub files: u64,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
}

impl ScenarioReport {
    /// The row of `tool` extracting `how`, if it ran.
    pub fn row(&self, tool: Tool, how: Extract) -> Option<&Row> {
        self.rows.iter().find(|t| t.tool == tool && t.how == how)
    }
}
