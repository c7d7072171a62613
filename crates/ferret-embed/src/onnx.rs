//! The ONNX Runtime engine: an int8 export of the model, run by the shared library the PyPI
//! `onnxruntime` wheel ships, loaded at run time (ort's own download of binaries needs a network
//! this project cannot assume).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;

use crate::EmbedderError;

/// The int8 model file `cargo xtask models` puts beside the tokenizer.
pub const ONNX_MODEL_FILE: &str = "model.int8.onnx";

/// The int8 model with ONNX Runtime's fused transformer kernels (attention, layer norms, GELU)
/// that `cargo xtask models --export` builds from the float weights; preferred to
/// [`ONNX_MODEL_FILE`] when it is there, being faster.
pub const FUSED_ONNX_MODEL_FILE: &str = "model.fused.int8.onnx";

/// Where ONNX Runtime's shared library is looked for: `$ORT_DYLIB_PATH`, else
/// `<models dir>/onnxruntime/libonnxruntime.so` (`.dylib`, `.dll`), where `cargo xtask models`
/// puts it. `model_dir` is the model's own folder, one level below the models directory.
pub fn onnxruntime_library(model_dir: &Path) -> PathBuf {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH") {
        return PathBuf::from(path);
    }
    let file = format!(
        "{}onnxruntime{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    model_dir
        .parent()
        .unwrap_or(model_dir)
        .join("onnxruntime")
        .join(file)
}

/// The library can be loaded once per process; every later session shares that environment.
static ENVIRONMENT: OnceLock<Result<Environment, String>> = OnceLock::new();

fn environment(library: &Path) -> Result<&'static Environment, EmbedderError> {
    ENVIRONMENT
        .get_or_init(|| {
            let builder = ort::init_from(library)
                .map_err(|e| format!("cannot load {}: {e}", library.display()))?;
            builder
                .with_name("ferret")
                .with_telemetry(false)
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|reason| EmbedderError::Runtime(format!("ONNX Runtime: {reason}")))
}

fn options(error: impl std::fmt::Display) -> EmbedderError {
    EmbedderError::Runtime(format!("ONNX Runtime session options: {error}"))
}

/// Model inputs we know how to fill.
#[derive(Clone, Copy)]
enum Input {
    Ids,
    Mask,
    TokenTypes,
}

pub(crate) struct OnnxBert {
    /// `Session::run` needs exclusive access; one forward pass already uses every thread.
    session: Mutex<Session>,
    inputs: Vec<Input>,
}

impl OnnxBert {
    pub(crate) fn load(
        model: &Path,
        library: &Path,
        threads: usize,
    ) -> Result<Self, EmbedderError> {
        let environment = environment(library)?;
        let invalid = |reason: String| EmbedderError::Invalid {
            file: model.to_owned(),
            reason,
        };
        let session = Session::builder(environment)
            .map_err(options)?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(options)?
            .with_intra_threads(threads)
            .map_err(options)?
            .with_inter_threads(1)
            .map_err(options)?
            .commit_from_file(model)
            .map_err(|e| invalid(e.to_string()))?;
        let inputs = session
            .inputs()
            .iter()
            .map(|outlet| match outlet.name() {
                "input_ids" => Ok(Input::Ids),
                "attention_mask" => Ok(Input::Mask),
                "token_type_ids" => Ok(Input::TokenTypes),
                other => Err(invalid(format!("unexpected model input `{other}`"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if session.outputs().is_empty() {
            return Err(invalid("the model has no output".into()));
        }
        Ok(Self {
            session: Mutex::new(session),
            inputs,
        })
    }

    /// The first output (`last_hidden_state`), flat, `batch × tokens × dimension`.
    pub(crate) fn hidden_states(
        &self,
        ids: &[u32],
        mask: &[u32],
        shape: (usize, usize),
    ) -> Result<Vec<f32>, String> {
        let dims = [shape.0 as i64, shape.1 as i64];
        let widen = |values: &[u32]| values.iter().map(|&v| i64::from(v)).collect::<Vec<i64>>();
        let tensor = |values: Vec<i64>| {
            Tensor::from_array((dims, values))
                .map(SessionInputValue::from)
                .map_err(|e| e.to_string())
        };
        let inputs = self
            .inputs
            .iter()
            .map(|input| match input {
                Input::Ids => tensor(widen(ids)),
                Input::Mask => tensor(widen(mask)),
                Input::TokenTypes => tensor(vec![0; ids.len()]),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut session = self
            .session
            .lock()
            .map_err(|_| "an earlier embedding call panicked".to_string())?;
        let outputs = session.run(inputs.as_slice()).map_err(|e| e.to_string())?;
        let (_, hidden) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| e.to_string())?;
        Ok(hidden.to_vec())
    }
}
