//! The vocabulary of finding a model file a workflow needs: what is asked ([`FileRequest`]), what
//! a model hub says of one of its files ([`ModelFile`], carried in a [`Hit`]'s payload), and what
//! the finder answers ([`ModelFind`]: a status and ranked [`ModelCandidate`]s).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use std::time::Duration;

use crate::{Budget, Hit, HitId};

/// Extensions model weights are stored with.
pub const MODEL_FILE_EXTENSIONS: [&str; 8] = [
    "safetensors",
    "ckpt",
    "pt",
    "pth",
    "bin",
    "gguf",
    "sft",
    "onnx",
];

/// The extension of `name` when it is a model file's (`x.safetensors`, in any case, with a
/// name before the dot), lower-cased.
pub fn model_file_extension(name: &str) -> Option<&'static str> {
    let (stem, extension) = name.trim().rsplit_once('.')?;
    let stem = stem.rsplit(['/', '\\']).next().unwrap_or(stem);
    if stem.is_empty() {
        return None;
    }
    MODEL_FILE_EXTENSIONS
        .into_iter()
        .find(|known| extension.eq_ignore_ascii_case(known))
}

/// The kind of model a file holds, as a loader node or a hub names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ModelType {
    /// A whole diffusion model with its text encoder and VAE.
    Checkpoint,
    /// A low-rank adaptation (LoRA, LoCon, DoRA).
    Lora,
    /// A variational autoencoder.
    Vae,
    /// A ControlNet.
    #[serde(rename = "controlnet")]
    ControlNet,
    /// A textual-inversion embedding.
    Embedding,
    /// An image upscaler (ESRGAN and the like).
    Upscaler,
    /// A text encoder (CLIP, T5).
    TextEncoder,
    /// A diffusion model without text encoder or VAE (a UNet or a transformer).
    DiffusionModel,
}

impl ModelType {
    /// Every type, in the order they are documented.
    pub const ALL: [ModelType; 8] = [
        Self::Checkpoint,
        Self::Lora,
        Self::Vae,
        Self::ControlNet,
        Self::Embedding,
        Self::Upscaler,
        Self::TextEncoder,
        Self::DiffusionModel,
    ];

    /// The name used on the command line, in configuration and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Checkpoint => "checkpoint",
            Self::Lora => "lora",
            Self::Vae => "vae",
            Self::ControlNet => "controlnet",
            Self::Embedding => "embedding",
            Self::Upscaler => "upscaler",
            Self::TextEncoder => "text_encoder",
            Self::DiffusionModel => "diffusion_model",
        }
    }

    /// The folder under a ComfyUI installation where a file of this type belongs.
    pub fn comfyui_folder(self) -> &'static str {
        match self {
            Self::Checkpoint => "models/checkpoints",
            Self::Lora => "models/loras",
            Self::Vae => "models/vae",
            Self::ControlNet => "models/controlnet",
            Self::Embedding => "models/embeddings",
            Self::Upscaler => "models/upscale_models",
            Self::TextEncoder => "models/clip",
            Self::DiffusionModel => "models/diffusion_models",
        }
    }

    /// Civitai's names of the type, as its `types` parameter takes them (a LoRA loader also
    /// loads LoCon and DoRA files); empty for types Civitai does not list.
    pub fn civitai_types(self) -> &'static [&'static str] {
        match self {
            Self::Checkpoint => &["Checkpoint"],
            Self::Lora => &["LORA", "LoCon", "DoRA"],
            Self::Vae => &["VAE"],
            Self::ControlNet => &["Controlnet"],
            Self::Embedding => &["TextualInversion"],
            Self::Upscaler => &["Upscaler"],
            Self::TextEncoder | Self::DiffusionModel => &[],
        }
    }
}

impl fmt::Display for ModelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a model type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a model type; the types are checkpoint, lora, vae, controlnet, embedding, upscaler, text_encoder and diffusion_model")]
pub struct UnknownModelType(pub String);

impl FromStr for ModelType {
    type Err = UnknownModelType;

    /// A type by its name or a name a hub or a loader gives it ("LORA", "LoCon",
    /// "TextualInversion", "clip", "unet", "upscale_models"), in any case, with `-`, `_` or
    /// spaces.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let key: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        let found = match key.as_str() {
            "checkpoint" | "checkpoints" | "ckpt" => Self::Checkpoint,
            "lora" | "loras" | "locon" | "dora" | "lycoris" => Self::Lora,
            "vae" | "vaes" => Self::Vae,
            "controlnet" | "controlnets" => Self::ControlNet,
            "embedding" | "embeddings" | "textualinversion" => Self::Embedding,
            "upscaler" | "upscalers" | "upscalemodel" | "upscalemodels" => Self::Upscaler,
            "textencoder" | "textencoders" | "clip" => Self::TextEncoder,
            "diffusionmodel" | "diffusionmodels" | "unet" => Self::DiffusionModel,
            _ => return Err(UnknownModelType(name.to_owned())),
        };
        Ok(found)
    }
}

/// Where a model file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// civitai.com.
    Civitai,
    /// The HuggingFace Hub.
    #[serde(rename = "huggingface")]
    HuggingFace,
}

impl ModelSource {
    /// Both, in the order they are documented.
    pub const ALL: [ModelSource; 2] = [Self::Civitai, Self::HuggingFace];

    /// The name used on the command line and on the wire; also the name of the backend that
    /// searches it, unless configured otherwise.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Civitai => "civitai",
            Self::HuggingFace => "huggingface",
        }
    }

    /// The hub's name in a sentence ("the HuggingFace Hub").
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Civitai => "Civitai",
            Self::HuggingFace => "the HuggingFace Hub",
        }
    }

    /// The hub's site, as a web search restricted to it names it.
    pub fn site(self) -> &'static str {
        match self {
            Self::Civitai => "civitai.com",
            Self::HuggingFace => "huggingface.co",
        }
    }

    /// The hub whose site `address` is on, if either's.
    pub fn of_address(address: &url::Url) -> Option<Self> {
        match address.host_str()? {
            "civitai.com" | "www.civitai.com" => Some(Self::Civitai),
            "huggingface.co" | "www.huggingface.co" | "hf.co" => Some(Self::HuggingFace),
            _ => None,
        }
    }
}

impl fmt::Display for ModelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a model source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a model source; the sources are civitai and huggingface")]
pub struct UnknownModelSource(pub String);

impl FromStr for ModelSource {
    type Err = UnknownModelSource;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name
            .trim()
            .to_ascii_lowercase()
            .replace(['-', '_', ' '], "")
            .as_str()
        {
            "civitai" => Ok(Self::Civitai),
            "huggingface" | "hf" | "hub" => Ok(Self::HuggingFace),
            _ => Err(UnknownModelSource(name.to_owned())),
        }
    }
}

/// What must be done before a file can be downloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// The repository's licence must be accepted (access is then granted at once).
    AcceptLicence,
    /// Access must be requested and the owner must approve it.
    OwnerApproval,
    /// The provider serves the file only to a signed-in user (a key).
    SignIn,
}

impl Gate {
    /// What the user must do, in a few words.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AcceptLicence => "gated: accept the licence on the model page first",
            Self::OwnerApproval => "gated: access must be requested and approved",
            Self::SignIn => "needs a signed-in download (set the provider's key)",
        }
    }
}

/// What a model hub states of one file: the payload of a hub backend's [`Hit`], under
/// [`ModelFile::PAYLOAD_FIELD`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelFile {
    /// The file's name, without folders ("sd_xl_base_1.0.safetensors").
    pub file_name: String,
    /// Its path in the repository, when it lies in a folder ("unet/model.safetensors").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The model's name at its source (a Civitai model's name, a Hub repository id).
    pub model_name: String,
    /// Where it was found.
    pub source: ModelSource,
    /// The model type the source states, when it states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<ModelType>,
    /// The base model the source states ("SDXL 1.0", "stabilityai/stable-diffusion-xl-base-1.0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_model: Option<String>,
    /// Size in bytes, when the source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// SHA-256 of the file, lower-case hex, when the source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Where the file itself is downloaded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    /// The model's page (a Civitai model version, a Hub repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_url: Option<String>,
    /// What must be done before downloading, when anything must.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

impl ModelFile {
    /// The payload field of a hit that holds its file.
    pub const PAYLOAD_FIELD: &'static str = "model_file";

    /// The file a hub backend's hit describes; `None` for any other hit.
    pub fn from_hit(hit: &Hit) -> Option<Self> {
        serde_json::from_value(hit.payload.get(Self::PAYLOAD_FIELD)?.clone()).ok()
    }

    /// A hit describing this file, identified by `id`, at `address` (the file's own address:
    /// two files of one model must not share it, since hits with one address are one result),
    /// from `backend`.
    pub fn into_hit(self, id: String, address: Option<String>, score: f32, backend: &str) -> Hit {
        let title = format!("{} ({})", self.file_name, self.model_name);
        let mut text = format!(
            "{} in {} on {}",
            self.file_name, self.model_name, self.source
        );
        if let Some(kind) = self.model_type {
            text.push_str(&format!(", a {kind}"));
        }
        if let Some(base) = &self.base_model {
            text.push_str(&format!(" for {base}"));
        }
        text.push('.');
        let mut hit = Hit::new(id, title, text, score, backend);
        hit.url = address;
        if let Ok(value) = serde_json::to_value(&self) {
            hit.payload.insert(Self::PAYLOAD_FIELD.to_owned(), value);
        }
        hit
    }
}

/// Whether a found file is, by the evidence, the one asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FindStatus {
    /// The best candidate has the exact file name or the file's hash with no conflict of type or
    /// base model, or, with no exact match anywhere, a variant of the name (`_fp16`) whose type
    /// and base model agree.
    Found,
    /// Anything else: nothing found, only near names, a conflict, or evidence missing because a
    /// hub did not answer.
    Uncertain,
    /// No hub asked answered (each failed or was unreachable): the file could not be searched.
    Unsearched,
}

impl FindStatus {
    /// The status as the command line and the wire write it (`FOUND`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Found => "FOUND",
            Self::Uncertain => "UNCERTAIN",
            Self::Unsearched => "UNSEARCHED",
        }
    }
}

/// One found file, ranked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelCandidate {
    /// The model's name at its source.
    pub name: String,
    /// The file's name.
    pub file_name: String,
    /// Where it was found.
    pub source: ModelSource,
    /// How sure the finder is that this is the file asked for, from 0 to 100.
    pub confidence: u8,
    /// Why, in a sentence: what matched and what differs.
    pub reason: String,
    /// The model page or repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where the file is downloaded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// SHA-256, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The type the source states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<ModelType>,
    /// The base model the source states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_model: Option<String>,
    /// The ComfyUI folder it belongs in (`models/loras`), from the requested type or else the
    /// source's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// What must be done before downloading, when anything must.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    /// The hit in [`Response::hits`](crate::Response::hits) it was read from.
    pub hit_id: HitId,
}

/// The finder's answer for one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelFind {
    /// What was looked for.
    pub requested: FileRequest,
    /// Found, or uncertain.
    pub status: FindStatus,
    /// The candidates, best first; empty when nothing was found.
    pub candidates: Vec<ModelCandidate>,
}

impl ModelFind {
    /// The best candidate, if any.
    pub fn best(&self) -> Option<&ModelCandidate> {
        self.candidates.first()
    }
}

/// How one rule moved a candidate's confidence, for the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RuleEffect {
    /// The rule, in a few words ("exact file name", "wrong model type").
    pub rule: String,
    /// Points added to (or, when negative, taken from) the confidence.
    pub points: i32,
}

/// One candidate of the final ranking as the trace records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RankedCandidate {
    /// The file's name.
    pub file_name: String,
    /// The model's name at its source.
    pub name: String,
    /// Where it was found.
    pub source: ModelSource,
    /// The final confidence, 0 to 100.
    pub confidence: u8,
    /// What each rule did, in the order they ran.
    pub rules: Vec<RuleEffect>,
    /// The model's confidence, when a model judged the candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_confidence: Option<u8>,
}

/// A model file to find: its name, and what the workflow that needs it says of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FileRequest {
    /// The file's name, without folders ("sd_xl_base_1.0.safetensors").
    pub file_name: String,
    /// The type the loader expects, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<ModelType>,
    /// The base model the workflow uses ("SDXL"), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_model: Option<String>,
    /// The workflow node that loads it ("LoraLoader").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// A source to rank higher when candidates are otherwise equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefer: Option<ModelSource>,
    /// The file's SHA-256, when known: a file with this hash is the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Where the workflow says the file comes from, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A file request that cannot be searched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FileRequestError {
    /// Neither a file name nor a hash was given.
    #[error("give a model file name, a SHA-256, or both")]
    NothingToFind,
    /// The name is empty or blank.
    #[error("the model file name is empty")]
    EmptyName,
    /// The name holds a folder or a parent reference.
    #[error(
        "`{0}` is a path, not a file name: give the file's name alone (\"model.safetensors\")"
    )]
    PathLike(String),
    /// The name is longer than a file name can be.
    #[error("the model file name is {0} characters long; at most 255 are accepted")]
    TooLong(usize),
    /// The hash is not 64 hexadecimal digits.
    #[error("`{0}` is not a SHA-256: expected 64 hexadecimal digits")]
    BadHash(String),
}

impl FileRequest {
    /// Longest file name accepted, in characters.
    pub const MAX_NAME_CHARS: usize = 255;

    /// A request for `file_name`, checked: not empty, not a path, not overlong.
    pub fn new(file_name: impl Into<String>) -> Result<Self, FileRequestError> {
        let file_name = checked_name(file_name.into())?;
        Ok(Self {
            file_name,
            model_type: None,
            base_model: None,
            node: None,
            prefer: None,
            sha256: None,
            url: None,
        })
    }

    /// A request for the file whose SHA-256 is `hash`, named `file_name` when the name is known.
    pub fn by_hash(hash: &str, file_name: Option<&str>) -> Result<Self, FileRequestError> {
        let sha256 = checked_hash(hash)?;
        let mut request = Self::new(file_name.unwrap_or(&sha256))?;
        request.sha256 = Some(sha256);
        Ok(request)
    }

    /// A request by name, by hash, or both (the hash then decides and the name is reported);
    /// [`FileRequestError::NothingToFind`] with neither.
    pub fn named_or_hashed(
        file_name: Option<&str>,
        sha256: Option<&str>,
    ) -> Result<Self, FileRequestError> {
        match (file_name, sha256) {
            (name, Some(hash)) => Self::by_hash(hash, name),
            (Some(name), None) => Self::new(name),
            (None, None) => Err(FileRequestError::NothingToFind),
        }
    }

    /// The same request expecting `model_type`.
    pub fn with_type(mut self, model_type: ModelType) -> Self {
        self.model_type = Some(model_type);
        self
    }

    /// The same request for a workflow built on `base_model`.
    pub fn with_base_model(mut self, base_model: impl Into<String>) -> Self {
        let base = base_model.into();
        self.base_model = (!base.trim().is_empty()).then(|| base.trim().to_owned());
        self
    }

    /// The same request ranking `source` higher.
    pub fn preferring(mut self, source: ModelSource) -> Self {
        self.prefer = Some(source);
        self
    }

    /// The same request, loaded by the workflow node `node`.
    pub fn loaded_by(mut self, node: impl Into<String>) -> Self {
        self.node = Some(node.into());
        self
    }

    /// The folder a file of the requested type belongs in, when the type is known.
    pub fn folder(&self) -> Option<&'static str> {
        self.model_type.map(ModelType::comfyui_folder)
    }

    /// The budget a finder run gets unless told otherwise: a hub call reads a search page and
    /// file lists, each up to the backend's own timeout, and may wait its turn under the hub's
    /// rate limit, so a question's 10 s per call is too short.
    pub fn default_budget() -> Budget {
        Budget {
            call_deadline: Duration::from_secs(60),
            wall_time: Duration::from_secs(120),
            ..Budget::default()
        }
    }
}

fn checked_name(name: String) -> Result<String, FileRequestError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(FileRequestError::EmptyName);
    }
    if name.contains(['/', '\\']) || name == "." || name == ".." || name.contains('\0') {
        return Err(FileRequestError::PathLike(name.to_owned()));
    }
    let chars = name.chars().count();
    if chars > FileRequest::MAX_NAME_CHARS {
        return Err(FileRequestError::TooLong(chars));
    }
    Ok(name.to_owned())
}

fn checked_hash(hash: &str) -> Result<String, FileRequestError> {
    let hash = hash.trim();
    let hash = hash.strip_prefix("sha256:").unwrap_or(hash);
    if hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(hash.to_ascii_lowercase())
    } else {
        Err(FileRequestError::BadHash(hash.to_owned()))
    }
}

/// The query text a hub backend reads as "the file with this SHA-256".
pub fn hash_query(sha256: &str) -> String {
    format!("sha256:{sha256}")
}

/// The SHA-256 a query asks for by hash ([`hash_query`]), if it is one.
pub fn hash_in_query(query: &str) -> Option<String> {
    let rest = query.trim().strip_prefix("sha256:")?;
    checked_hash(rest).ok()
}

/// The query text a hub backend reads as "the file at this address of yours": a download or
/// model-page address a workflow records for a file. The backend does not fetch the address; it
/// reads the model, version or path out of it and asks its own API.
pub fn address_query(address: &str) -> String {
    format!("address:{}", address.trim())
}

/// The address a query names ([`address_query`]), if it is one.
pub fn address_in_query(query: &str) -> Option<url::Url> {
    let address = url::Url::parse(query.trim().strip_prefix("address:")?.trim()).ok()?;
    matches!(address.scheme(), "http" | "https").then_some(address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_like_or_empty_name_is_refused_with_its_reason() {
        assert_eq!(FileRequest::new("  "), Err(FileRequestError::EmptyName));
        for path in ["../x", "a/b.safetensors", "C:\\models\\x.ckpt", ".."] {
            assert!(
                matches!(FileRequest::new(path), Err(FileRequestError::PathLike(_))),
                "{path}"
            );
        }
        assert!(matches!(
            FileRequest::new("x".repeat(256)),
            Err(FileRequestError::TooLong(256))
        ));
    }

    #[test]
    fn model_types_read_the_names_hubs_and_loaders_use() {
        for (name, kind) in [
            ("LORA", ModelType::Lora),
            ("LoCon", ModelType::Lora),
            ("TextualInversion", ModelType::Embedding),
            ("Controlnet", ModelType::ControlNet),
            ("upscale_models", ModelType::Upscaler),
            ("clip", ModelType::TextEncoder),
            ("unet", ModelType::DiffusionModel),
            ("text-encoder", ModelType::TextEncoder),
        ] {
            assert_eq!(name.parse::<ModelType>(), Ok(kind), "{name}");
        }
        for kind in ModelType::ALL {
            assert_eq!(kind.as_str().parse::<ModelType>(), Ok(kind));
        }
        let error = "motion_module".parse::<ModelType>().unwrap_err();
        assert!(error.to_string().contains("checkpoint, lora"));
    }

    #[test]
    fn a_request_holds_what_its_builders_say_and_a_checked_hash() {
        let hash = "A".repeat(64);
        let request = FileRequest::by_hash(&hash, Some("x.safetensors"))
            .unwrap()
            .with_type(ModelType::Lora)
            .with_base_model(" SDXL 1.0 ")
            .preferring(ModelSource::HuggingFace)
            .loaded_by("LoraLoader");
        assert_eq!(request.file_name, "x.safetensors");
        assert_eq!(request.sha256.as_deref(), Some("a".repeat(64).as_str()));
        assert_eq!(request.base_model.as_deref(), Some("SDXL 1.0"));
        assert_eq!(request.folder(), Some("models/loras"));
        assert!(FileRequest::by_hash("abc", None).is_err());
        assert_eq!(
            FileRequest::named_or_hashed(None, None),
            Err(FileRequestError::NothingToFind)
        );
    }

    #[test]
    fn hub_addresses_are_known_by_their_host() {
        let hub = |a: &str| ModelSource::of_address(&url::Url::parse(a).unwrap());
        assert_eq!(
            hub("https://civitai.com/models/1?modelVersionId=2"),
            Some(ModelSource::Civitai)
        );
        assert_eq!(
            hub("https://huggingface.co/a/b/resolve/main/x.safetensors"),
            Some(ModelSource::HuggingFace)
        );
        assert_eq!(hub("https://example.com/x.safetensors"), None);
    }

    #[test]
    fn a_hit_carries_its_file_and_gives_it_back() {
        let file = ModelFile {
            file_name: "a.safetensors".into(),
            path: None,
            model_name: "A".into(),
            source: ModelSource::Civitai,
            model_type: Some(ModelType::Lora),
            base_model: Some("SDXL 1.0".into()),
            size_bytes: Some(10),
            sha256: None,
            download_url: None,
            page_url: None,
            gate: None,
        };
        let hit = file
            .clone()
            .into_hit("civitai:1:a".into(), None, 1.0, "civitai");
        assert_eq!(ModelFile::from_hit(&hit), Some(file));
        assert_eq!(
            ModelFile::from_hit(&Hit::new("x", "x", "x", 1.0, "web")),
            None
        );
    }

    #[test]
    fn model_files_are_known_by_their_extension() {
        assert_eq!(
            model_file_extension("sd_xl_base_1.0.safetensors"),
            Some("safetensors")
        );
        assert_eq!(model_file_extension("unet/Model.GGUF"), Some("gguf"));
        assert_eq!(model_file_extension("README.md"), None);
        assert_eq!(model_file_extension(".safetensors"), None);
        assert_eq!(model_file_extension("models\\.pth"), None);
    }

    #[test]
    fn address_queries_are_recognised() {
        let query = address_query("https://civitai.com/api/download/models/135867");
        assert_eq!(
            address_in_query(&query).map(|u| u.to_string()),
            Some("https://civitai.com/api/download/models/135867".to_owned())
        );
        assert_eq!(address_in_query("address:file:///etc/passwd"), None);
        assert_eq!(address_in_query("sdxl vae"), None);
    }

    #[test]
    fn hash_queries_are_recognised() {
        let hash = "b".repeat(64);
        assert_eq!(hash_in_query(&hash_query(&hash)), Some(hash));
        assert_eq!(hash_in_query("sdxl lora"), None);
    }
}
