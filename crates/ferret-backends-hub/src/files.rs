//! What makes a file a model file, for both hubs.

/// True when `path` names a file of model weights (by its extension, in any case).
pub fn is_model_file(path: &str) -> bool {
    ferret_core::model_file_extension(path).is_some()
}

/// The last component of `path`.
pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A score that falls with rank, so the executor's fusion keeps a hub's order.
pub(crate) fn rank_score(rank: usize) -> f32 {
    1.0 / (1.0 + rank as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_files_are_known_by_extension() {
        assert!(is_model_file("sd_xl_base_1.0.safetensors"));
        assert!(is_model_file("unet/Model.GGUF"));
        assert!(!is_model_file("README.md"));
        assert!(!is_model_file("safetensors"));
        assert_eq!(
            file_name("vae/diffusion_pytorch_model.bin"),
            "diffusion_pytorch_model.bin"
        );
    }
}
