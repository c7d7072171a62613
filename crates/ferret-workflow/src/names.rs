//! The rules that tell a model file in a widget value, and its type from the node that names it.

use ferret_core::ModelType;

/// How ComfyUI's tokenizer marks an embedding in prompt text.
const EMBEDDING_TAG: &str = "embedding:";

/// Whether `value` ends in a model file extension (in any case) after some name: a value
/// ending in one names a file whatever node holds it.
pub(crate) fn has_model_extension(value: &str) -> bool {
    ferret_core::model_file_extension(value).is_some()
}

/// The folder part (with `/` separators) and the file name of a value: ComfyUI lists files in
/// subfolders of a models folder as "SDXL/x.safetensors", or "SDXL\x.safetensors" when saved on
/// Windows. The folder part is dropped when it would leave the models folder (`..`, a drive).
pub(crate) fn split_name(value: &str) -> Option<(Option<String>, String)> {
    let parts: Vec<&str> = value
        .trim()
        .split(['/', '\\'])
        .map(str::trim)
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let (file, folders) = parts.split_last()?;
    let inside = folders
        .iter()
        .all(|folder| *folder != ".." && !folder.contains(':'));
    let subfolder = (inside && !folders.is_empty()).then(|| folders.join("/"));
    Some((subfolder, (*file).to_owned()))
}

/// The embedding names `text` refers to as `embedding:NAME`, as written ("EasyNegative",
/// "EasyNegative.pt", "SD1.5\style.pt"): a name ends at a space, a comma, a bracket or the
/// colon of a weight (`(embedding:x:1.2)`).
pub(crate) fn embedding_names(text: &str) -> Vec<&str> {
    text.match_indices(EMBEDDING_TAG)
        .filter(|(at, _)| {
            // "myembedding:x" is a word of its own, not a reference.
            text[..*at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        })
        .map(|(at, _)| {
            let name = &text[at + EMBEDDING_TAG.len()..];
            let end = name
                .find(|c: char| c.is_whitespace() || ",()[]{}:;\"'<>|".contains(c))
                .unwrap_or(name.len());
            // A sentence may end right after the name.
            name[..end].trim_end_matches('.')
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The type ComfyUI's own loaders (and the GGUF ones) load, by node type.
pub(crate) fn loader_type(node_type: &str) -> Option<ModelType> {
    let model_type = match node_type {
        "CheckpointLoaderSimple"
        | "CheckpointLoader"
        | "ImageOnlyCheckpointLoader"
        | "unCLIPCheckpointLoader" => ModelType::Checkpoint,
        "LoraLoader" | "LoraLoaderModelOnly" => ModelType::Lora,
        "VAELoader" => ModelType::Vae,
        "ControlNetLoader" | "DiffControlNetLoader" => ModelType::ControlNet,
        "CLIPLoader"
        | "DualCLIPLoader"
        | "TripleCLIPLoader"
        | "QuadrupleCLIPLoader"
        | "CLIPLoaderGGUF"
        | "DualCLIPLoaderGGUF"
        | "TripleCLIPLoaderGGUF" => ModelType::TextEncoder,
        "UNETLoader" | "UnetLoaderGGUF" => ModelType::DiffusionModel,
        "UpscaleModelLoader" => ModelType::Upscaler,
        _ => return None,
    };
    Some(model_type)
}

/// The type a custom node's name (or an input's name, "ckpt_name") suggests, by the words
/// ComfyUI's folders use: "Load LoRA", "Power Lora Loader (rgthree)", "CheckpointLoader|pysssss".
pub(crate) fn guess_type(name: &str) -> Option<ModelType> {
    let key: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let hints = [
        ("lora", ModelType::Lora),
        ("vae", ModelType::Vae),
        ("controlnet", ModelType::ControlNet),
        ("upscale", ModelType::Upscaler),
        ("clip", ModelType::TextEncoder),
        ("unet", ModelType::DiffusionModel),
        ("checkpoint", ModelType::Checkpoint),
        ("ckpt", ModelType::Checkpoint),
    ];
    hints
        .into_iter()
        .find(|(word, _)| key.contains(word))
        .map(|(_, model_type)| model_type)
}

/// A SHA-256 as a workflow states it (`hash`, with `hash_type` "SHA256" or none), lower-case;
/// `None` for any other hash.
pub(crate) fn sha256_of(hash: &str, hash_type: Option<&str>) -> Option<String> {
    if hash_type.is_some_and(|kind| !kind.trim().eq_ignore_ascii_case("sha256")) {
        return None;
    }
    let hash = hash.trim();
    let hash = hash.strip_prefix("sha256:").unwrap_or(hash);
    (hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| hash.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_name_is_the_last_component_and_the_rest_its_subfolder() {
        let split = |value: &str| split_name(value).unwrap();
        assert_eq!(split("x.safetensors"), (None, "x.safetensors".into()));
        assert_eq!(
            split("SDXL\\x.safetensors"),
            (Some("SDXL".into()), "x.safetensors".into())
        );
        assert_eq!(
            split("SDXL/styles\\x.safetensors"),
            (Some("SDXL/styles".into()), "x.safetensors".into())
        );
        assert_eq!(
            split("./a//b/x.ckpt"),
            (Some("a/b".into()), "x.ckpt".into())
        );
        assert_eq!(split_name(""), None);
        assert_eq!(split_name("/"), None);
    }

    #[test]
    fn a_subfolder_that_would_leave_the_models_folder_is_dropped() {
        for value in [
            "..\\..\\x.safetensors",
            "C:\\models\\x.safetensors",
            "a/../x.pt",
        ] {
            assert_eq!(split_name(value).unwrap().0, None, "{value}");
        }
        assert_eq!(split_name("a/..").unwrap().1, "..");
    }

    #[test]
    fn model_extensions_are_recognised_in_any_case_and_only_at_the_end() {
        for value in [
            "x.safetensors",
            "X.SafeTensors",
            "m.ckpt",
            "e.pt",
            "u.pth",
            "i.bin",
            "f.gguf",
            "a.sft",
            "d.onnx",
            " x.safetensors ",
        ] {
            assert!(has_model_extension(value), "{value}");
        }
        for value in [
            "default",
            "x.safetensors.json",
            "v1-inference.yaml",
            ".pt",
            "",
            "fp8",
        ] {
            assert!(!has_model_extension(value), "{value}");
        }
    }

    #[test]
    fn embeddings_are_read_from_prompt_text_as_written() {
        assert_eq!(
            embedding_names("(embedding:EasyNegative:1.2), embedding:bad-hands-5.pt, lowres"),
            ["EasyNegative", "bad-hands-5.pt"]
        );
        assert_eq!(
            embedding_names("by embedding:SD1.5\\style. nothing else"),
            ["SD1.5\\style"]
        );
        assert!(embedding_names("myembedding:x, embedding: , embedding:").is_empty());
    }

    #[test]
    fn node_names_suggest_types() {
        assert_eq!(loader_type("DualCLIPLoader"), Some(ModelType::TextEncoder));
        assert_eq!(loader_type("KSampler"), None);
        for (name, expected) in [
            ("Power Lora Loader (rgthree)", Some(ModelType::Lora)),
            ("CheckpointLoader|pysssss", Some(ModelType::Checkpoint)),
            ("ckpt_name", Some(ModelType::Checkpoint)),
            ("control_net_name", Some(ModelType::ControlNet)),
            ("UnetLoaderGGUFAdvanced", Some(ModelType::DiffusionModel)),
            ("Upscale Model Loader", Some(ModelType::Upscaler)),
            ("IPAdapterModelLoader", None),
        ] {
            assert_eq!(guess_type(name), expected, "{name}");
        }
    }

    #[test]
    fn only_sha256_hashes_are_kept_lower_case() {
        let upper = "AB".repeat(32);
        assert_eq!(sha256_of(&upper, Some("SHA256")), Some("ab".repeat(32)));
        assert_eq!(sha256_of(&upper, None), Some("ab".repeat(32)));
        assert_eq!(sha256_of(&upper, Some("blake3")), None);
        assert_eq!(sha256_of("abc", Some("SHA256")), None);
    }
}
