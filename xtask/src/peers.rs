//! Running the Python peers a bench compares against: a virtual environment per peer, a
//! scratch folder per run, and the figures a peer prints.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};

/// A scratch folder for one bench run, `ferret-<name>-<pid>` in the system's temporary folder.
pub(crate) fn work_dir(name: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ferret-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Run a peer's Python script (`command`, with its arguments) and read the JSON object it
/// prints last: its figures.
pub(crate) fn peer_figures<T: serde::de::DeserializeOwned>(
    command: &mut Command,
    what: &str,
) -> anyhow::Result<T> {
    let output = command
        .output()
        .with_context(|| format!("running {what}"))?;
    if !output.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let last = output
        .stdout
        .split(|&b| b == b'\n')
        .rfind(|line| !line.is_empty())
        .unwrap_or_default();
    serde_json::from_slice(last).with_context(|| format!("reading the figures of {what}"))
}

/// The Python of the virtual environment `venv` holding `packages`, made and filled first if
/// it is not; a marker written after the install says it completed, so a failed one is tried
/// again.
pub(crate) fn venv_with(venv: &Path, packages: &[&str]) -> anyhow::Result<PathBuf> {
    let python = venv.join("bin/python");
    let marker = venv.join("ferret-installed.txt");
    let wanted = packages.join("\n");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        println!("installing {} into {}", packages.join(", "), venv.display());
        run_checked(Command::new("python3").args(["-m", "venv"]).arg(venv))?;
        run_checked(
            Command::new(&python)
                .args(["-m", "pip", "install", "-q"])
                .args(packages),
        )?;
        std::fs::write(&marker, wanted)?;
    }
    Ok(python)
}

pub(crate) fn run_checked(command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("running {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}
