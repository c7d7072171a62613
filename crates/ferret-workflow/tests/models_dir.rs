//! Which referenced files a models folder (and the folders of an `extra_model_paths.yaml`)
//! already holds.

use std::fs;
use std::path::{Path, PathBuf};

use ferret_core::ModelType;
use ferret_workflow::{ModelsDir, WorkflowError, WorkflowModel};

fn model(file_name: &str, model_type: Option<ModelType>) -> WorkflowModel {
    WorkflowModel {
        file_name: file_name.into(),
        subfolder: None,
        model_type,
        node_type: "Loader".into(),
        node_id: "1".into(),
        url: None,
        sha256: None,
        directory: None,
    }
}

/// Creates the file at `path` (and its folders), returning the path.
fn touch(path: PathBuf) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, b"weights").unwrap();
    path
}

#[test]
fn a_file_is_found_in_the_folder_of_its_type_only() {
    let root = tempfile::tempdir().unwrap();
    let lora = touch(root.path().join("loras/detail.safetensors"));
    let models = ModelsDir::new(root.path());

    let wanted = model("detail.safetensors", Some(ModelType::Lora));
    assert_eq!(models.holds(&wanted), Some(lora.clone()));
    // A checkpoint of the same name is not that LoRA.
    let as_checkpoint = model("detail.safetensors", Some(ModelType::Checkpoint));
    assert_eq!(models.holds(&as_checkpoint), None);
    // Of unknown type, every folder is searched.
    assert_eq!(models.holds(&model("detail.safetensors", None)), Some(lora));
    assert_eq!(
        models.holds(&model("absent.safetensors", Some(ModelType::Lora))),
        None
    );
    assert_eq!(models.holds(&model("absent.safetensors", None)), None);
}

#[test]
fn text_encoders_and_diffusion_models_are_found_in_both_their_folders() {
    let root = tempfile::tempdir().unwrap();
    let t5 = touch(root.path().join("text_encoders/t5xxl_fp16.safetensors"));
    let clip_l = touch(root.path().join("clip/clip_l.safetensors"));
    let unet = touch(root.path().join("unet/flux1-dev-Q4_K_S.gguf"));
    let models = ModelsDir::new(root.path());
    let encoder = |name| model(name, Some(ModelType::TextEncoder));
    assert_eq!(models.holds(&encoder("t5xxl_fp16.safetensors")), Some(t5));
    assert_eq!(models.holds(&encoder("clip_l.safetensors")), Some(clip_l));
    let diffusion = model("flux1-dev-Q4_K_S.gguf", Some(ModelType::DiffusionModel));
    assert_eq!(models.holds(&diffusion), Some(unet));
}

#[test]
fn the_workflows_subfolder_is_looked_in_first_then_any_subfolder_a_few_levels_deep() {
    let root = tempfile::tempdir().unwrap();
    let checkpoints = root.path().join("checkpoints");
    // Another copy sorts first among subfolders: the workflow's own subfolder must still win.
    touch(checkpoints.join("A/juggernaut.safetensors"));
    let listed = touch(checkpoints.join("SDXL/Juggernaut/juggernaut.safetensors"));
    let deep = touch(checkpoints.join("a/b/c/d/deep.safetensors"));
    touch(checkpoints.join("a/b/c/d/e/too-deep.safetensors"));
    let models = ModelsDir::new(root.path());

    let mut juggernaut = model("juggernaut.safetensors", Some(ModelType::Checkpoint));
    juggernaut.subfolder = Some("SDXL/Juggernaut".into());
    assert_eq!(models.holds(&juggernaut), Some(listed));
    // A subfolder the file is not in: found where it is.
    juggernaut.subfolder = Some("Pony".into());
    assert_eq!(
        models.holds(&juggernaut),
        Some(checkpoints.join("A/juggernaut.safetensors"))
    );
    let checkpoint = |name| model(name, Some(ModelType::Checkpoint));
    assert_eq!(models.holds(&checkpoint("deep.safetensors")), Some(deep));
    assert_eq!(models.holds(&checkpoint("too-deep.safetensors")), None);
}

#[test]
fn an_embedding_named_without_extension_is_found_with_one() {
    let root = tempfile::tempdir().unwrap();
    let easy = touch(root.path().join("embeddings/EasyNegative.safetensors"));
    let models = ModelsDir::new(root.path());
    let embedding = model("EasyNegative", Some(ModelType::Embedding));
    assert_eq!(models.holds(&embedding), Some(easy));
}

#[test]
fn a_name_edited_into_a_path_finds_nothing_outside_the_folders() {
    let root = tempfile::tempdir().unwrap();
    touch(root.path().join("secret.safetensors"));
    touch(root.path().join("outside/x.safetensors"));
    let models = ModelsDir::new(root.path().join("models"));
    let mut escaping = model("../secret.safetensors", None);
    assert_eq!(models.holds(&escaping), None);
    escaping.file_name = "x.safetensors".into();
    escaping.subfolder = Some("../../outside".into());
    assert_eq!(models.holds(&escaping), None);
}

fn write_yaml(folder: &Path, text: &str) -> PathBuf {
    let yaml = folder.join("extra_model_paths.yaml");
    fs::write(&yaml, text).unwrap();
    yaml
}

#[test]
fn the_folders_of_extra_model_paths_are_searched_after_the_root() {
    let work = tempfile::tempdir().unwrap();
    let comfy = work.path().join("ComfyUI");
    let webui = work.path().join("stable-diffusion-webui");
    let in_root = touch(comfy.join("models/loras/both.safetensors"));
    touch(webui.join("models/Lora/both.safetensors"));
    let single = touch(webui.join("models/Stable-diffusion/realvis.safetensors"));
    let second_line = touch(webui.join("models/LyCORIS/locon.safetensors"));
    let relative = touch(comfy.join("other/loras/styles/style.safetensors"));
    let esrgan = touch(webui.join("models/ESRGAN/4x-UltraSharp.pth"));
    // The a111 section's base is absolute; the comfyui section's is relative to the YAML.
    let yaml = write_yaml(
        &comfy,
        &format!(
            r#"
comfyui:
    base_path: ./
    checkpoints: models/checkpoints/
    loras: |
        models/loras/
        other/loras/
    is_default: true
a111:
    base_path: {}
    checkpoints: models/Stable-diffusion
    vae: models/VAE
    loras: |
         models/Lora
         models/LyCORIS
    upscale_models: |
                  models/ESRGAN
    embeddings: embeddings
    controlnet: models/ControlNet
"#,
            webui.display()
        ),
    );
    let models = ModelsDir::new(comfy.join("models"))
        .with_extra_paths(&yaml)
        .unwrap();
    let lora = |name| model(name, Some(ModelType::Lora));
    assert_eq!(models.holds(&lora("both.safetensors")), Some(in_root));
    assert_eq!(models.holds(&lora("locon.safetensors")), Some(second_line));
    assert_eq!(models.holds(&lora("style.safetensors")), Some(relative));
    let checkpoint = model("realvis.safetensors", Some(ModelType::Checkpoint));
    assert_eq!(models.holds(&checkpoint), Some(single));
    assert_eq!(
        models.holds(&model("4x-UltraSharp.pth", None)),
        Some(esrgan)
    );
    // Without the YAML, the root alone holds none of them.
    assert_eq!(
        ModelsDir::new(comfy.join("models")).holds(&checkpoint),
        None
    );
}

#[test]
fn a_base_path_relative_to_the_yaml_and_a_missing_base_are_read_from_its_folder() {
    let work = tempfile::tempdir().unwrap();
    let shared = touch(work.path().join("shared/vae/ae.safetensors"));
    let beside = touch(work.path().join("config/vae/sdxl_vae.safetensors"));
    let config = work.path().join("config");
    let yaml = write_yaml(
        &config,
        "shared:\n  base_path: ../shared\n  vae: vae\nbeside:\n  vae: vae\n",
    );
    let models = ModelsDir::new(work.path().join("models"))
        .with_extra_paths(&yaml)
        .unwrap();
    let vae = |name| model(name, Some(ModelType::Vae));
    assert_eq!(models.holds(&vae("ae.safetensors")), Some(shared));
    assert_eq!(models.holds(&vae("sdxl_vae.safetensors")), Some(beside));
}

#[test]
fn a_malformed_extra_model_paths_is_an_error_naming_the_file() {
    let work = tempfile::tempdir().unwrap();
    for text in [
        "comfyui:\n  base_path: [unclosed\n  loras: models/loras\n",
        "- models/loras\n- models/checkpoints\n",
        "comfyui: just a string\n",
        "comfyui:\n  base_path: /x\n  loras: 12\n",
    ] {
        let yaml = write_yaml(work.path(), text);
        let error = ModelsDir::new(work.path())
            .with_extra_paths(&yaml)
            .unwrap_err();
        assert!(
            matches!(error, WorkflowError::ExtraPaths { ref file, .. } if file == &yaml),
            "{text}: {error:?}"
        );
        assert!(
            error.to_string().contains(&yaml.display().to_string()),
            "{error}"
        );
    }
    let missing = work.path().join("absent.yaml");
    let error = ModelsDir::new(work.path())
        .with_extra_paths(&missing)
        .unwrap_err();
    assert!(matches!(error, WorkflowError::Unreadable { ref file, .. } if file == &missing));
}
