//! The candle engine: pure Rust, float weights from `model.safetensors`, no shared library. Slower
//! than the int8 ONNX model, but it runs wherever Rust does and gives sentence-transformers'
//! exact vectors.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};

use crate::EmbedderError;

pub(crate) struct CandleBert {
    model: BertModel,
    /// candle's matrix products run on rayon; a pool of our own keeps the thread count ours.
    pool: rayon::ThreadPool,
}

impl CandleBert {
    pub(crate) fn load(
        weights_file: &Path,
        bert: &BertConfig,
        threads: usize,
    ) -> Result<Self, EmbedderError> {
        let invalid = |reason: String| EmbedderError::Invalid {
            file: weights_file.to_owned(),
            reason,
        };
        let weights = std::fs::read(weights_file).map_err(|e| invalid(e.to_string()))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| invalid(e.to_string()))?;
        let model = BertModel::load(vb, bert).map_err(|e| invalid(e.to_string()))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("ferret-embed-{i}"))
            .num_threads(threads)
            .build()
            .map_err(|e| EmbedderError::Runtime(format!("cannot start the thread pool: {e}")))?;
        Ok(Self { model, pool })
    }

    /// The last hidden states, flat, `batch × tokens × dimension`.
    pub(crate) fn hidden_states(
        &self,
        ids: &[u32],
        mask: &[u32],
        shape: (usize, usize),
    ) -> Result<Vec<f32>, String> {
        let run = || -> candle_core::Result<Vec<f32>> {
            let ids = Tensor::from_slice(ids, shape, &Device::Cpu)?;
            let mask = Tensor::from_slice(mask, shape, &Device::Cpu)?;
            self.model
                .forward(&ids, &ids.zeros_like()?, Some(&mask))?
                .flatten_all()?
                .to_vec1()
        };
        self.pool.install(run).map_err(|e| e.to_string())
    }
}
