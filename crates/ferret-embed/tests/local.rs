//! The in-process model: vectors match sentence-transformers' own, batching and padding do not
//! change them, and a missing or incomplete model folder says what to do. Tests that need the
//! model say they were skipped without it, unless `FERRET_REQUIRE_MODELS` is set (as in CI).

use std::path::PathBuf;

use ferret_core::Embedder;
use ferret_embed::{
    EmbedderError, LocalEmbedder, LocalEmbedderConfig, LocalRuntime, OnnxGraph, MINILM_DIR,
};

fn models_dir() -> PathBuf {
    std::env::var_os("FERRET_MODELS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ferret/models")))
        .expect("FERRET_MODELS or HOME is set")
}

fn minilm() -> Option<LocalEmbedder> {
    on(LocalRuntime::Auto)
}

/// Both engines, each when its files are there.
fn engines() -> Vec<LocalEmbedder> {
    [LocalRuntime::Candle, LocalRuntime::Onnx]
        .into_iter()
        .filter_map(on)
        .collect()
}

fn on(runtime: LocalRuntime) -> Option<LocalEmbedder> {
    let dir = models_dir();
    match LocalEmbedder::minilm(
        &dir,
        LocalEmbedderConfig {
            runtime,
            ..Default::default()
        },
    ) {
        Ok(embedder) => Some(embedder),
        Err(e @ (EmbedderError::MissingFiles { .. } | EmbedderError::MissingRuntime { .. })) => {
            assert!(std::env::var_os("FERRET_REQUIRE_MODELS").is_none(), "{e}");
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("the model in {} does not load: {e}", dir.display()),
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[derive(serde::Deserialize)]
struct Reference {
    sentences: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

#[test]
fn vectors_match_sentence_transformers() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/embed/minilm-reference.json");
    let reference: Reference =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("reference file"))
            .expect("parses");
    for embedder in engines() {
        // The float model must reproduce the reference; int8 weights may move a vector a little.
        let floor = if embedder.runtime() == LocalRuntime::Onnx {
            0.99
        } else {
            0.999
        };
        let ours = embedder
            .embed_blocking(&reference.sentences)
            .expect("embeds");
        assert_eq!(embedder.dimension(), 384);
        for ((sentence, expected), got) in reference
            .sentences
            .iter()
            .zip(&reference.vectors)
            .zip(&ours)
        {
            assert_eq!(got.len(), 384);
            let similarity = cosine(expected, got);
            assert!(
                similarity >= floor,
                "{:?}: cosine {similarity} for {sentence:?}",
                embedder.runtime()
            );
            let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
        }
    }
}

#[test]
fn the_runtimes_are_told_apart_by_name() {
    let engines = engines();
    let names: Vec<&str> = engines.iter().map(|e| e.name()).collect();
    if engines.len() == 2 {
        // Vectors from different weights must not share an index or a cache entry.
        let fused = models_dir()
            .join(MINILM_DIR)
            .join(ferret_embed::FUSED_ONNX_MODEL_FILE)
            .is_file();
        let int8 = if fused {
            "all-minilm-l6-v2-fused-int8@256"
        } else {
            "all-minilm-l6-v2-int8@256"
        };
        assert_eq!(names, ["all-minilm-l6-v2@256", int8]);
    }
}

/// MiniLM's folder under `models`, with the files ONNX Runtime reads, each made by `fill(name,
/// path)`.
fn onnx_model_folder(
    models: &std::path::Path,
    fill: impl Fn(&str, &std::path::Path) -> std::io::Result<()>,
) -> PathBuf {
    let model = models.join(MINILM_DIR);
    std::fs::create_dir_all(&model).unwrap();
    for file in [
        "config.json",
        "tokenizer.json",
        ferret_embed::ONNX_MODEL_FILE,
    ] {
        fill(file, &model.join(file)).unwrap();
    }
    model
}

#[cfg(unix)]
#[test]
fn the_fused_graph_is_preferred_when_there_and_named_apart() {
    let real = models_dir();
    let Some(_) = on(LocalRuntime::Onnx) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = onnx_model_folder(dir.path(), |file, to| {
        std::fs::copy(real.join(MINILM_DIR).join(file), to).map(|_| ())
    });
    std::os::unix::fs::symlink(real.join("onnxruntime"), dir.path().join("onnxruntime")).unwrap();
    let onnx = || {
        LocalEmbedder::minilm(
            dir.path(),
            LocalEmbedderConfig {
                runtime: LocalRuntime::Onnx,
                ..Default::default()
            },
        )
    };
    assert_eq!(onnx().unwrap().name(), "all-minilm-l6-v2-int8@256");
    // A fused graph beside the packaged one is the one loaded: a broken one is named.
    let fused = model.join(ferret_embed::FUSED_ONNX_MODEL_FILE);
    std::fs::write(&fused, "not a model").unwrap();
    let err = onnx().unwrap_err();
    assert!(
        matches!(&err, EmbedderError::Invalid { file, .. } if file == &fused),
        "{err}"
    );
    let built = real
        .join(MINILM_DIR)
        .join(ferret_embed::FUSED_ONNX_MODEL_FILE);
    if !built.is_file() {
        eprintln!("skipped the fused graph's own run: `cargo xtask models --export` builds it");
        return;
    }
    std::fs::copy(&built, &fused).unwrap();
    let embedder = onnx().unwrap();
    assert_eq!(embedder.name(), "all-minilm-l6-v2-fused-int8@256");
    alone_and_batched_agree(&embedder);
}

#[test]
fn onnx_without_its_library_names_the_path_and_the_command() {
    let dir = tempfile::tempdir().unwrap();
    onnx_model_folder(dir.path(), |_, to| std::fs::write(to, "{}"));
    if std::env::var_os("ORT_DYLIB_PATH").is_some() {
        eprintln!("skipped: ORT_DYLIB_PATH points elsewhere");
        return;
    }
    let config = LocalEmbedderConfig {
        runtime: LocalRuntime::Onnx,
        ..Default::default()
    };
    let err = LocalEmbedder::minilm(dir.path(), config).unwrap_err();
    let EmbedderError::MissingRuntime { library } = &err else {
        panic!("{err}")
    };
    assert!(
        library.starts_with(dir.path().join("onnxruntime")),
        "{}",
        library.display()
    );
    assert!(err.to_string().contains("cargo xtask models"), "{err}");
    // Auto falls back to candle, which then names its own missing weights.
    let err = LocalEmbedder::minilm(dir.path(), LocalEmbedderConfig::default()).unwrap_err();
    assert!(
        matches!(&err, EmbedderError::MissingFiles { missing, .. } if missing == &["model.safetensors"]),
        "{err}"
    );
}

#[test]
fn a_text_embeds_the_same_alone_and_in_a_padded_batch() {
    for embedder in engines() {
        alone_and_batched_agree(&embedder);
    }
}

fn alone_and_batched_agree(embedder: &LocalEmbedder) {
    let short = "Vitamin D deficiency raises fracture risk.".to_string();
    let long = "A much longer passage about bone density, calcium intake, sunlight exposure and the many ways \
                that clinical trials have measured the effect of supplements on older adults."
        .to_string();
    let alone = embedder
        .embed_blocking(std::slice::from_ref(&short))
        .unwrap();
    let batched = embedder
        .embed_blocking(&[long.clone(), short.clone(), long])
        .unwrap();
    assert!(cosine(&alone[0], &batched[1]) > 0.9999);
    assert!(
        cosine(&batched[0], &batched[2]) > 0.9999,
        "order of results follows the input"
    );
}

#[test]
fn text_beyond_the_token_limit_is_cut_not_refused() {
    for embedder in engines() {
        cut_at_the_limit(&embedder);
    }
}

fn cut_at_the_limit(embedder: &LocalEmbedder) {
    let head: String = (0..300).map(|i| format!("word{i} ")).collect();
    let longer = format!("{head} and a tail that lies well past the limit");
    let vectors = embedder.embed_blocking(&[head, longer]).unwrap();
    assert!(
        cosine(&vectors[0], &vectors[1]) > 0.9999,
        "only the first 256 tokens count"
    );
}

#[test]
fn a_missing_model_folder_names_the_files_and_the_command() {
    let empty = tempfile::tempdir().unwrap();
    let err = LocalEmbedder::minilm(empty.path(), LocalEmbedderConfig::default()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(&empty.path().join(MINILM_DIR).display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("model.safetensors") && message.contains("cargo xtask models"),
        "{message}"
    );
}

#[test]
fn an_incomplete_model_folder_names_only_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    let err = LocalEmbedder::from_dir(dir.path(), LocalEmbedderConfig::default()).unwrap_err();
    let EmbedderError::MissingFiles { missing, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(missing, &["tokenizer.json", "model.safetensors"]);
}

#[test]
fn a_corrupt_model_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    for file in ferret_embed::MODEL_FILES {
        std::fs::write(dir.path().join(file), "not a model").unwrap();
    }
    let err = LocalEmbedder::from_dir(dir.path(), LocalEmbedderConfig::default()).unwrap_err();
    assert!(
        matches!(err, EmbedderError::Invalid { ref file, .. } if file.ends_with("config.json")),
        "{err}"
    );
}

#[test]
fn settings_out_of_range_are_refused() {
    let Some(_) = minilm() else { return };
    let config = LocalEmbedderConfig {
        max_tokens: 1024,
        ..Default::default()
    };
    let err = LocalEmbedder::minilm(&models_dir(), config).unwrap_err();
    assert!(matches!(err, EmbedderError::Config(_)), "{err}");
}

#[test]
fn an_index_name_gives_back_the_settings_that_made_it() {
    let cases = [
        (
            "all-minilm-l6-v2@256",
            LocalRuntime::Candle,
            OnnxGraph::Fastest,
            256,
        ),
        (
            "all-minilm-l6-v2-int8@256",
            LocalRuntime::Onnx,
            OnnxGraph::Packaged,
            256,
        ),
        (
            "all-minilm-l6-v2-fused-int8@128",
            LocalRuntime::Onnx,
            OnnxGraph::Fused,
            128,
        ),
    ];
    for (name, runtime, graph, max_tokens) in cases {
        let config = LocalEmbedderConfig::reproducing(name).expect(name);
        assert_eq!(
            (config.runtime, config.onnx_graph, config.max_tokens),
            (runtime, graph, max_tokens),
            "{name}"
        );
    }
    for other in [
        "text-embedding-3-small",
        "all-minilm-l6-v2-q4@256",
        "all-minilm-l6-v2@x",
    ] {
        assert!(LocalEmbedderConfig::reproducing(other).is_none(), "{other}");
    }
}
