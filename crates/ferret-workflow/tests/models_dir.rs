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
        present_at: None,
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
fn the_workflows_subfolder_is_looked_in_first_then_any_subfolder_eight_levels_deep() {
    let root = tempfile::tempdir().unwrap();
    let checkpoints = root.path().join("checkpoints");
    // Another copy sorts first among subfolders: the workflow's own subfolder must still win.
    touch(checkpoints.join("A/juggernaut.safetensors"));
    let listed = touch(checkpoints.join("SDXL/Juggernaut/juggernaut.safetensors"));
    let deep = touch(checkpoints.join("a/b/c/d/e/f/g/h/deep.safetensors"));
    touch(checkpoints.join("a/b/c/d/e/f/g/h/i/too-deep.safetensors"));
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
fn a_file_of_a_type_without_a_folder_of_its_own_is_found_in_any_folder_of_the_models_root() {
    let root = tempfile::tempdir().unwrap();
    let ipadapter = touch(
        root.path()
            .join("ipadapter/ip-adapter-plus_sdxl_vit-h.safetensors"),
    );
    let yolo = touch(root.path().join("ultralytics/bbox/face_yolov8m.pt"));
    let motion = touch(root.path().join("animatediff_models/mm_sd_v15_v2.ckpt"));
    let hyper = touch(root.path().join("hypernetworks/sd15/anime.pt"));
    // A file in the models folder itself is in no folder ComfyUI loads from.
    touch(root.path().join("stray.safetensors"));
    let models = ModelsDir::new(root.path());

    let unknown = |name| model(name, None);
    assert_eq!(
        models.holds(&unknown("ip-adapter-plus_sdxl_vit-h.safetensors")),
        Some(ipadapter)
    );
    let mut face = unknown("face_yolov8m.pt");
    face.subfolder = Some("bbox".into());
    assert_eq!(models.holds(&face), Some(yolo));
    assert_eq!(models.holds(&unknown("mm_sd_v15_v2.ckpt")), Some(motion));
    assert_eq!(models.holds(&unknown("anime.pt")), Some(hyper));
    assert_eq!(models.holds(&unknown("stray.safetensors")), None);
    // A known type still looks only in its own folders.
    let as_lora = model("mm_sd_v15_v2.ckpt", Some(ModelType::Lora));
    assert_eq!(models.holds(&as_lora), None);
}

#[test]
fn the_directory_the_workflow_names_is_looked_in_first() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("models");
    let vision = touch(root.join("clip_vision/CLIP-ViT-H-14.safetensors"));
    let plain = touch(root.join("checkpoints/model.safetensors"));
    let special = touch(root.join("checkpoints_sdxl/model.safetensors"));
    // `clip` is the old name of `text_encoders`: a directory names both.
    let t5 = touch(root.join("clip/t5xxl_fp16.safetensors"));
    touch(work.path().join("elsewhere/model.safetensors"));
    let models = ModelsDir::new(&root);

    let mut clip_vision = model("CLIP-ViT-H-14.safetensors", None);
    clip_vision.directory = Some("clip_vision".into());
    assert_eq!(models.holds(&clip_vision), Some(vision));
    let mut checkpoint = model("model.safetensors", Some(ModelType::Checkpoint));
    checkpoint.directory = Some("checkpoints_sdxl".into());
    assert_eq!(models.holds(&checkpoint), Some(special));
    let mut encoder = model("t5xxl_fp16.safetensors", None);
    encoder.directory = Some("text_encoders".into());
    assert_eq!(models.holds(&encoder), Some(t5));
    // A directory that would leave the models folder is not followed.
    checkpoint.directory = Some("../elsewhere".into());
    assert_eq!(models.holds(&checkpoint), Some(plain));
}

#[cfg(unix)]
#[test]
fn a_symlinked_folder_already_searched_is_not_searched_again() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let loras = root.path().join("loras");
    let real = touch(loras.join("zz-real/style.safetensors"));
    // A link to a sibling sorts first, and a link back to the folder makes a loop.
    symlink(loras.join("zz-real"), loras.join("aa-link")).unwrap();
    symlink(&loras, loras.join("zz-real/loop")).unwrap();
    let models = ModelsDir::new(root.path());
    let lora = |name| model(name, Some(ModelType::Lora));
    assert_eq!(models.holds(&lora("style.safetensors")), Some(real));
    assert_eq!(models.holds(&lora("absent.safetensors")), None);
    // A linked folder that is not also reached directly is searched.
    let elsewhere = tempfile::tempdir().unwrap();
    touch(elsewhere.path().join("linked.safetensors"));
    symlink(elsewhere.path(), loras.join("shared")).unwrap();
    let models = ModelsDir::new(root.path());
    assert_eq!(
        models.holds(&lora("linked.safetensors")),
        Some(loras.join("shared/linked.safetensors"))
    );
}

#[test]
fn a_models_folder_is_listed_once_for_all_the_files_checked() {
    let root = tempfile::tempdir().unwrap();
    touch(root.path().join("loras/first.safetensors"));
    let models = ModelsDir::new(root.path());
    let lora = |name| model(name, Some(ModelType::Lora));
    assert!(models.holds(&lora("first.safetensors")).is_some());
    // Added after the listing: this `ModelsDir` does not list the folder again.
    let later = touch(root.path().join("loras/later.safetensors"));
    assert_eq!(models.holds(&lora("later.safetensors")), None);
    assert_eq!(
        ModelsDir::new(root.path()).holds(&lora("later.safetensors")),
        Some(later)
    );
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
fn every_folder_of_extra_model_paths_is_searched_for_a_file_of_unknown_type() {
    let work = tempfile::tempdir().unwrap();
    let shared = work.path().join("shared");
    let ipadapter = touch(shared.join("ipadapter/ip-adapter_sd15.safetensors"));
    let vision = touch(shared.join("vision/clip-vit-large.safetensors"));
    let yaml = write_yaml(
        work.path(),
        &format!(
            "shared:\n  base_path: {}\n  ipadapter: ipadapter\n  clip_vision: vision\n  is_default: true\n",
            shared.display()
        ),
    );
    let models = ModelsDir::new(work.path().join("models"))
        .with_extra_paths(&yaml)
        .unwrap();
    assert_eq!(
        models.holds(&model("ip-adapter_sd15.safetensors", None)),
        Some(ipadapter)
    );
    let mut clip_vision = model("clip-vit-large.safetensors", None);
    assert_eq!(models.holds(&clip_vision), Some(vision.clone()));
    clip_vision.directory = Some("clip_vision".into());
    assert_eq!(models.holds(&clip_vision), Some(vision));
}

#[test]
fn a_base_path_names_environment_variables_as_comfyui_expands_them() {
    let work = tempfile::tempdir().unwrap();
    let a = touch(work.path().join("a/loras/a.safetensors"));
    let b = touch(work.path().join("b/loras/b.safetensors"));
    let c = touch(work.path().join("c/loras/c.safetensors"));
    // An unknown variable stays as written: a folder of that very name.
    let literal = touch(
        work.path()
            .join("$FERRET_WORKFLOW_TEST_UNSET/loras/literal.safetensors"),
    );
    // A name of this test's own, so that no other test reads or sets it.
    std::env::set_var("FERRET_WORKFLOW_TEST_BASE", work.path());
    let yaml = write_yaml(
        work.path(),
        "a:\n  base_path: $FERRET_WORKFLOW_TEST_BASE/a\n  loras: loras\n\
         b:\n  base_path: ${FERRET_WORKFLOW_TEST_BASE}/b\n  loras: loras\n\
         c:\n  base_path: '%FERRET_WORKFLOW_TEST_BASE%/c'\n  loras: loras\n\
         d:\n  base_path: $FERRET_WORKFLOW_TEST_UNSET\n  loras: loras\n",
    );
    let models = ModelsDir::new(work.path().join("models"))
        .with_extra_paths(&yaml)
        .unwrap();
    let lora = |name| model(name, Some(ModelType::Lora));
    assert_eq!(models.holds(&lora("a.safetensors")), Some(a));
    assert_eq!(models.holds(&lora("b.safetensors")), Some(b));
    assert_eq!(models.holds(&lora("c.safetensors")), Some(c));
    assert_eq!(models.holds(&lora("literal.safetensors")), Some(literal));
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
