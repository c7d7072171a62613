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

/// What a loader or an input says about the files it takes: their type, when it is one of the
/// finder's, and the models folder they belong in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kind {
    pub(crate) model_type: Option<ModelType>,
    pub(crate) directory: Option<&'static str>,
}

impl Kind {
    pub(crate) const fn of(model_type: ModelType) -> Self {
        Self {
            model_type: Some(model_type),
            directory: Some(folder_of(model_type)),
        }
    }

    /// Files of a folder none of the finder's types stands for ("clip_vision").
    const fn folder(directory: &'static str) -> Self {
        Self {
            model_type: None,
            directory: Some(directory),
        }
    }
}

/// The folder ComfyUI's loaders read a type's files from, by its current name.
pub(crate) const fn folder_of(model_type: ModelType) -> &'static str {
    match model_type {
        ModelType::Checkpoint => "checkpoints",
        ModelType::Lora => "loras",
        ModelType::Vae => "vae",
        ModelType::ControlNet => "controlnet",
        ModelType::Embedding => "embeddings",
        ModelType::Upscaler => "upscale_models",
        ModelType::TextEncoder => "text_encoders",
        ModelType::DiffusionModel => "diffusion_models",
    }
}

/// The type whose files a models folder holds, by ComfyUI's folder names (old ones too:
/// "clip", "unet") or a name of the type ("LoRA"); `None` for the folders of other files
/// ("clip_vision", "ipadapter").
pub(crate) fn folder_type(directory: &str) -> Option<ModelType> {
    let model_type = match directory.trim().to_ascii_lowercase().as_str() {
        "checkpoints" => ModelType::Checkpoint,
        "loras" => ModelType::Lora,
        "vae" => ModelType::Vae,
        "controlnet" | "t2i_adapter" => ModelType::ControlNet,
        "embeddings" => ModelType::Embedding,
        "upscale_models" => ModelType::Upscaler,
        "text_encoders" | "clip" => ModelType::TextEncoder,
        "diffusion_models" | "unet" => ModelType::DiffusionModel,
        _ => return directory.parse().ok(),
    };
    Some(model_type)
}

/// What ComfyUI's own loaders (and the GGUF ones and a few well-known custom ones) load, by
/// node type: named here because their names mislead a guess ("CLIPVisionLoader" is no text
/// encoder) or say nothing of the folder ("IPAdapterModelLoader").
pub(crate) fn loader_kind(node_type: &str) -> Option<Kind> {
    let kind = match node_type {
        "CheckpointLoaderSimple"
        | "CheckpointLoader"
        | "ImageOnlyCheckpointLoader"
        | "unCLIPCheckpointLoader" => Kind::of(ModelType::Checkpoint),
        "LoraLoader" | "LoraLoaderModelOnly" => Kind::of(ModelType::Lora),
        "VAELoader" => Kind::of(ModelType::Vae),
        "ControlNetLoader" | "DiffControlNetLoader" => Kind::of(ModelType::ControlNet),
        "CLIPLoader"
        | "DualCLIPLoader"
        | "TripleCLIPLoader"
        | "QuadrupleCLIPLoader"
        | "CLIPLoaderGGUF"
        | "DualCLIPLoaderGGUF"
        | "TripleCLIPLoaderGGUF"
        | "QuadrupleCLIPLoaderGGUF" => Kind::of(ModelType::TextEncoder),
        "UNETLoader" | "UnetLoaderGGUF" | "UnetLoaderGGUFAdvanced" => {
            Kind::of(ModelType::DiffusionModel)
        }
        "UpscaleModelLoader" => Kind::of(ModelType::Upscaler),
        "CLIPVisionLoader" => Kind::folder("clip_vision"),
        "StyleModelLoader" => Kind::folder("style_models"),
        "HypernetworkLoader" => Kind::folder("hypernetworks"),
        "GLIGENLoader" => Kind::folder("gligen"),
        "PhotoMakerLoader" => Kind::folder("photomaker"),
        "IPAdapterModelLoader" => Kind::folder("ipadapter"),
        "UltralyticsDetectorProvider" => Kind::folder("ultralytics"),
        "ADE_LoadAnimateDiffModel" => Kind::folder("animatediff_models"),
        _ => return None,
    };
    Some(kind)
}

/// What an API-format input of ComfyUI's own loaders holds, by its name, whatever node takes
/// it: custom nodes reuse these names for the same files ("ckpt_name" in "Efficient Loader").
/// "clip_name" is left out: `CLIPLoader` and `CLIPVisionLoader` both take it.
pub(crate) fn input_kind(key: &str) -> Option<Kind> {
    let kind = match key {
        "ckpt_name" => Kind::of(ModelType::Checkpoint),
        "lora_name" => Kind::of(ModelType::Lora),
        "vae_name" => Kind::of(ModelType::Vae),
        "control_net_name" => Kind::of(ModelType::ControlNet),
        "unet_name" => Kind::of(ModelType::DiffusionModel),
        "style_model_name" => Kind::folder("style_models"),
        "hypernetwork_name" => Kind::folder("hypernetworks"),
        "gligen_name" => Kind::folder("gligen"),
        "ipadapter_file" => Kind::folder("ipadapter"),
        _ => return None,
    };
    Some(kind)
}

/// The type a custom node's name (or an input's name, "ckpt_name") suggests, by the words
/// ComfyUI's folders use: "Load LoRA", "Power Lora Loader (rgthree)", "CheckpointLoader|pysssss".
/// Names of files no type stands for suggest none, though they hold a word that would
/// ("CLIPVisionLoader" holds "clip", "IPAdapterUnifiedLoader" nothing of the file it loads).
pub(crate) fn guess_type(name: &str) -> Option<ModelType> {
    let key: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let hints = [
        ("clipvision", None),
        ("ipadapter", None),
        ("stylemodel", None),
        ("hypernetwork", None),
        ("lora", Some(ModelType::Lora)),
        ("vae", Some(ModelType::Vae)),
        ("controlnet", Some(ModelType::ControlNet)),
        ("upscale", Some(ModelType::Upscaler)),
        ("clip", Some(ModelType::TextEncoder)),
        ("unet", Some(ModelType::DiffusionModel)),
        ("checkpoint", Some(ModelType::Checkpoint)),
        ("ckpt", Some(ModelType::Checkpoint)),
    ];
    hints
        .into_iter()
        .find(|(word, _)| key.contains(word))
        .and_then(|(_, model_type)| model_type)
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
        assert_eq!(
            loader_kind("DualCLIPLoader"),
            Some(Kind::of(ModelType::TextEncoder))
        );
        assert_eq!(loader_kind("KSampler"), None);
        for (name, expected) in [
            ("Power Lora Loader (rgthree)", Some(ModelType::Lora)),
            ("CheckpointLoader|pysssss", Some(ModelType::Checkpoint)),
            ("ckpt_name", Some(ModelType::Checkpoint)),
            ("control_net_name", Some(ModelType::ControlNet)),
            ("UnetLoaderGGUFAdvanced", Some(ModelType::DiffusionModel)),
            ("Upscale Model Loader", Some(ModelType::Upscaler)),
            ("IPAdapterModelLoader", None),
            ("CLIPVisionLoader", None),
            ("IPAdapterClipVisionEnhancer", None),
            ("StyleModelLoader", None),
            ("HypernetworkLoader", None),
        ] {
            assert_eq!(guess_type(name), expected, "{name}");
        }
    }

    #[test]
    fn folders_name_their_type_in_any_case_and_other_folders_none() {
        for (folder, expected) in [
            ("loras", Some(ModelType::Lora)),
            ("Checkpoints", Some(ModelType::Checkpoint)),
            ("clip", Some(ModelType::TextEncoder)),
            ("unet", Some(ModelType::DiffusionModel)),
            ("LoRA", Some(ModelType::Lora)),
            ("clip_vision", None),
            ("ipadapter", None),
            ("", None),
        ] {
            assert_eq!(folder_type(folder), expected, "{folder}");
        }
        for model_type in ModelType::ALL {
            assert_eq!(folder_type(folder_of(model_type)), Some(model_type));
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
