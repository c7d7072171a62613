//! What every report shares: the command that made it, the build it was made by, and writing
//! it as JSON and Markdown.

use std::path::Path;

use serde::Serialize;

/// The command line that produced a report, as the report quotes it.
pub(crate) fn command_line() -> String {
    format!(
        "cargo xtask {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    )
}

/// Write `report` as `<stem>.json` and `markdown` as `<stem>.md`, creating the folder, and say so.
/// The file name of a `kind` report: `report` when given, else `kind` and the half run
/// (`coding-agent-even`).
pub(crate) fn report_name(
    kind: &str,
    half: Option<crate::judged::Half>,
    report: Option<&str>,
) -> String {
    match (report, half) {
        (Some(name), _) => name.to_owned(),
        (None, Some(h)) => format!("{kind}-{}", h.name()),
        (None, None) => kind.to_owned(),
    }
}

pub(crate) fn write_report(
    stem: &Path,
    report: &impl Serialize,
    markdown: &str,
) -> anyhow::Result<()> {
    if let Some(dir) = stem.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(
        stem.with_extension("json"),
        serde_json::to_string_pretty(report)? + "\n",
    )?;
    std::fs::write(stem.with_extension("md"), markdown)?;
    println!("wrote {}.{{json,md}}", stem.display());
    Ok(())
}

/// The build this binary is, for reports: Ferret's own crates are unoptimised in a dev build
/// (dependencies are optimised in both), so timings of the pipeline differ several-fold.
pub(crate) fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "dev build (`cargo xtask`; Ferret's crates unoptimised)"
    } else {
        "release build (`cargo run --release -p xtask --`)"
    }
}
