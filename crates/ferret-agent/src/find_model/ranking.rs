//! Ranking the files found: hard rules first (a matching hash is certain; the exact file name,
//! then the same name in another precision or format; a wrong model type or base model costs
//! confidence; the preferred source is raised), then, when a model is configured, its judgement
//! blended in. The status follows from the best candidate's evidence alone.

use async_trait::async_trait;
use ferret_core::{
    FileRequest, FindStatus, HitId, ModelCandidate, ModelFile, ModelType, RankedCandidate,
    RuleEffect, StageOutput,
};
use ferret_llm::StageModel;

use super::names::{base_family, normalized, shared_words, variant_difference};
use super::planning::request_context;
use crate::prompts::{CandidateValidationContext, FileCandidate};

/// Most candidates a model is asked to judge.
const MAX_JUDGED: usize = 8;

/// How a found file's name relates to the one wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameMatch {
    /// The file's SHA-256 is the one asked for: it is the file, whatever its name.
    Hash,
    /// The same name, ignoring case.
    Exact,
    /// The same name but for precision, format or separators; what differs.
    Variant(String),
    /// Another name sharing some words.
    Similar,
    /// Nothing in common.
    Different,
}

/// A found file with its confidence and what each rule did to it.
#[derive(Debug, Clone)]
pub struct Scored {
    /// The file as its hub states it.
    pub file: ModelFile,
    /// The hit it was read from.
    pub hit_id: HitId,
    /// How its name relates to the one wanted.
    pub name_match: NameMatch,
    /// Its type contradicts the requested one.
    pub type_conflict: bool,
    /// Its base model's family contradicts the requested one.
    pub base_conflict: bool,
    /// Both SHA-256 are known and differ: another file of the same name.
    pub hash_conflict: bool,
    /// Its type is the requested one (or one that loads alike), or none was requested.
    pub type_agrees: bool,
    /// Its base model is of the requested family, or none was requested (or it does not
    /// matter for the requested type).
    pub base_agrees: bool,
    /// From 0 to 100.
    pub confidence: u8,
    /// The rules' points before they were held to 0..=99: two candidates the cap makes equal
    /// still differ here.
    pub points: i32,
    /// Its hub is the one the request prefers.
    pub preferred: bool,
    /// The rules' effects, in order.
    pub rules: Vec<RuleEffect>,
    /// Why, in a sentence.
    pub reason: String,
    /// The model's confidence, when a model judged it.
    pub model_confidence: Option<u8>,
}

impl Scored {
    /// The candidate as the response gives it.
    pub fn candidate(&self, request: &FileRequest) -> ModelCandidate {
        let file = &self.file;
        ModelCandidate {
            name: file.model_name.clone(),
            file_name: file.file_name.clone(),
            source: file.source,
            confidence: self.confidence,
            reason: self.reason.clone(),
            url: file.page_url.clone(),
            download_url: file.download_url.clone(),
            size_bytes: file.size_bytes,
            sha256: file.sha256.clone(),
            model_type: file.model_type,
            base_model: file.base_model.clone(),
            folder: request
                .model_type
                .or(file.model_type)
                .map(|t| t.comfyui_folder().to_owned()),
            gate: file.gate,
            hit_id: self.hit_id.clone(),
        }
    }

    /// The candidate as the trace records it.
    pub fn ranked(&self) -> RankedCandidate {
        RankedCandidate {
            file_name: self.file.file_name.clone(),
            name: self.file.model_name.clone(),
            source: self.file.source,
            confidence: self.confidence,
            rules: self.rules.clone(),
            model_confidence: self.model_confidence,
        }
    }
}

/// `file` scored by the rules against `request`.
pub fn score(request: &FileRequest, file: ModelFile, hit_id: HitId) -> Scored {
    let mut rules = Vec::new();
    let mut said = Vec::new();
    let rule = |rules: &mut Vec<RuleEffect>, name: &str, points: i32| {
        rules.push(RuleEffect {
            rule: name.to_owned(),
            points,
        });
    };
    let wanted = &request.file_name;
    let hash_matches = request
        .sha256
        .as_deref()
        .zip(file.sha256.as_deref())
        .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b));
    let name_match = if hash_matches {
        rule(&mut rules, "same SHA-256", 100);
        said.push("its SHA-256 is the one asked for".to_owned());
        NameMatch::Hash
    } else if file.file_name.eq_ignore_ascii_case(wanted) {
        rule(&mut rules, "exact file name", 90);
        said.push("exact file name".to_owned());
        NameMatch::Exact
    } else if normalized(&file.file_name) == normalized(wanted) && !normalized(wanted).is_empty() {
        let difference = variant_difference(wanted, &file.file_name);
        rule(&mut rules, "same name in another variant", 70);
        said.push(if difference.is_empty() {
            format!("same name written differently (`{}`)", file.file_name)
        } else {
            format!(
                "same model, differing in {difference} (`{}`)",
                file.file_name
            )
        });
        NameMatch::Variant(difference)
    } else {
        let shared =
            shared_words(wanted, &file.file_name).max(shared_words(wanted, &file.model_name));
        let points = (shared * 40.0).round() as i32;
        if points > 0 {
            rule(&mut rules, "similar name", points);
            said.push(format!(
                "a different file name (`{}`) sharing some words",
                file.file_name
            ));
            NameMatch::Similar
        } else {
            said.push(format!("a different file name (`{}`)", file.file_name));
            NameMatch::Different
        }
    };
    let hash_conflict = !hash_matches
        && request
            .sha256
            .as_deref()
            .zip(file.sha256.as_deref())
            .is_some();
    if hash_conflict {
        rule(&mut rules, "different SHA-256", -60);
        said.push("but its SHA-256 is not the one the workflow records".to_owned());
    }
    let (mut type_conflict, mut type_agrees) = (false, request.model_type.is_none());
    if let (Some(wanted), Some(found)) = (request.model_type, file.model_type) {
        if wanted == found {
            rule(&mut rules, "model type agrees", 5);
            type_agrees = true;
        } else if types_compatible(wanted, found) {
            // Civitai lists diffusion-model-only files (Flux finetunes) as checkpoints.
            type_agrees = true;
        } else {
            type_conflict = true;
            rule(&mut rules, "wrong model type", -50);
            said.push(format!("but it is a {found}, not a {wanted}"));
        }
    }
    // Upscalers and text encoders serve any base model; hubs label them with one anyway.
    let base_matters = !matches!(
        request.model_type,
        Some(ModelType::Upscaler | ModelType::TextEncoder)
    );
    let (mut base_conflict, mut base_agrees) =
        (false, request.base_model.is_none() || !base_matters);
    let families = request
        .base_model
        .as_deref()
        .and_then(base_family)
        .zip(file.base_model.as_deref().and_then(base_family))
        .filter(|_| base_matters);
    if let Some((wanted_family, found_family)) = families {
        if wanted_family == found_family {
            rule(&mut rules, "base model agrees", 5);
            base_agrees = true;
        } else {
            base_conflict = true;
            rule(&mut rules, "base model differs", -40);
            said.push(format!(
                "made for {} while the workflow uses {}",
                file.base_model.as_deref().unwrap_or_default(),
                request.base_model.as_deref().unwrap_or_default()
            ));
        }
    }
    if request.prefer == Some(file.source) {
        rule(&mut rules, "preferred source", 5);
    }
    if let Some(gate) = file.gate {
        said.push(gate.as_str().to_owned());
    }
    let total: i32 = rules.iter().map(|r| r.points).sum();
    let confidence = if hash_matches {
        100
    } else {
        total.clamp(0, 99) as u8
    };
    let mut reason = said.join("; ");
    if let Some(first) = reason.get(..1) {
        reason = format!("{}{}.", first.to_uppercase(), &reason[1..]);
    }
    let preferred = request.prefer == Some(file.source);
    Scored {
        points: total,
        preferred,
        hash_conflict,
        type_agrees,
        base_agrees,
        file,
        hit_id,
        name_match,
        type_conflict,
        base_conflict,
        confidence,
        rules,
        reason,
        model_confidence: None,
    }
}

/// Best first: confidence, then the rules' points before the cap, then the preferred hub, then
/// the stronger name evidence, then the hubs' own order.
pub fn rank(mut scored: Vec<Scored>) -> Vec<Scored> {
    let strength = |s: &Scored| match s.name_match {
        NameMatch::Hash => 4,
        NameMatch::Exact => 3,
        NameMatch::Variant(_) => 2,
        NameMatch::Similar => 1,
        NameMatch::Different => 0,
    };
    scored.sort_by(|a, b| {
        b.confidence
            .cmp(&a.confidence)
            .then_with(|| b.points.cmp(&a.points))
            .then_with(|| b.preferred.cmp(&a.preferred))
            .then_with(|| strength(b).cmp(&strength(a)))
    });
    scored
}

/// FOUND when the best candidate is the file by its hash with no conflict of type or base
/// model (a hash names the bytes, not what the workflow expects of them), or by its exact name
/// with no conflict at all and no other file of that name that may be the one meant; or, when
/// no candidate has the exact name, a variant whose type and base model agree with those
/// requested, and every planned hub answered (an exact match may sit on a hub that did not).
/// Anything else is UNCERTAIN.
pub fn status(ranked: &[Scored], every_hub_answered: bool) -> FindStatus {
    let Some(best) = ranked.first() else {
        return FindStatus::Uncertain;
    };
    let clean = !best.type_conflict && !best.base_conflict && !best.hash_conflict;
    let any_exact = ranked
        .iter()
        .any(|s| matches!(s.name_match, NameMatch::Exact | NameMatch::Hash));
    let found = match best.name_match {
        NameMatch::Hash => !best.type_conflict && !best.base_conflict,
        NameMatch::Exact => clean && !ranked[1..].iter().any(|other| rivals(best, other)),
        NameMatch::Variant(_) => {
            clean && best.type_agrees && best.base_agrees && !any_exact && every_hub_answered
        }
        NameMatch::Similar | NameMatch::Different => false,
    };
    if found {
        FindStatus::Found
    } else {
        FindStatus::Uncertain
    }
}

/// Whether `other`, also a clean exact match, may be the file meant rather than `best`: their
/// hashes differ, or, with a hash unknown, it is another model on the same hub (a generic
/// name such as `diffusion_pytorch_model.safetensors`). The same name on both hubs is most
/// often one file uploaded twice.
/// `ranked` with the best candidate's reason naming every other file of the same name that may
/// be another file (another hash, or another model when a hash is unknown): a reader sees the
/// conflict, whatever the status.
pub(crate) fn name_conflicts(mut ranked: Vec<Scored>) -> Vec<Scored> {
    let Some((best, others)) = ranked.split_first_mut() else {
        return ranked;
    };
    let conflicting: Vec<String> = others
        .iter()
        .filter(|other| {
            other
                .file
                .file_name
                .eq_ignore_ascii_case(&best.file.file_name)
        })
        .filter_map(|other| {
            // The same bytes uploaded twice are one file; another hash, or another model
            // when a hash is unknown, may be the file meant.
            let note = match (&best.file.sha256, &other.file.sha256) {
                (Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => return None,
                (Some(_), Some(_)) => ", another hash",
                _ if other.file.model_name != best.file.model_name => "",
                _ => return None,
            };
            Some(format!(
                "{} on {}{note}",
                other.file.model_name,
                other.file.source.display_name()
            ))
        })
        .collect();
    if !conflicting.is_empty() {
        best.reason = format!(
            "{} Other files of this name: {}.",
            best.reason.trim_end(),
            conflicting.join("; ")
        );
    }
    ranked
}

fn rivals(best: &Scored, other: &Scored) -> bool {
    let clean = !other.type_conflict && !other.base_conflict && !other.hash_conflict;
    if other.name_match != NameMatch::Exact || !clean {
        return false;
    }
    match (best.file.sha256.as_deref(), other.file.sha256.as_deref()) {
        (Some(a), Some(b)) => !a.eq_ignore_ascii_case(b),
        _ => best.file.source == other.file.source && best.file.model_name != other.file.model_name,
    }
}

/// Whether a file of type `found` loads where one of type `wanted` is expected.
fn types_compatible(wanted: ModelType, found: ModelType) -> bool {
    use ModelType::{Checkpoint, DiffusionModel};
    matches!(
        (wanted, found),
        (Checkpoint, DiffusionModel) | (DiffusionModel, Checkpoint)
    )
}

/// Judges the rules' ranking: the rules alone, or a model with them.
#[async_trait]
pub trait CandidateValidator: Send + Sync {
    /// `ranked` judged again, best first.
    async fn validate(
        &self,
        request: &FileRequest,
        ranked: Vec<Scored>,
    ) -> StageOutput<Vec<Scored>>;
}

/// The rules alone: their ranking stands.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleValidator;

#[async_trait]
impl CandidateValidator for RuleValidator {
    async fn validate(
        &self,
        _request: &FileRequest,
        ranked: Vec<Scored>,
    ) -> StageOutput<Vec<Scored>> {
        StageOutput::heuristic(ranked)
    }
}

/// A model judges the best candidates with the validation prompt (confidence 0-100 and a
/// reason each); its confidence is blended half and half with the rules', except that a
/// matching hash stays certain. A reply judging a candidate it was not shown falls back to the
/// rules.
#[derive(Debug, Clone)]
pub struct LlmCandidateValidator {
    model: StageModel,
}

impl LlmCandidateValidator {
    /// A validator asking `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait]
impl CandidateValidator for LlmCandidateValidator {
    async fn validate(
        &self,
        request: &FileRequest,
        ranked: Vec<Scored>,
    ) -> StageOutput<Vec<Scored>> {
        if ranked.is_empty() {
            return StageOutput::heuristic(ranked);
        }
        let judged = ranked.len().min(MAX_JUDGED);
        let context = CandidateValidationContext {
            model_name: request.file_name.clone(),
            context: request_context(request),
            preferred_source: request.prefer.map(|s| s.as_str().to_owned()),
            candidates: ranked[..judged]
                .iter()
                .enumerate()
                .map(|(i, s)| FileCandidate {
                    number: i + 1,
                    name: s.file.model_name.clone(),
                    file_name: s.file.file_name.clone(),
                    model_type: s.file.model_type.map(|t| t.as_str().to_owned()),
                    base_model: s.file.base_model.clone(),
                    source: s.file.source.as_str().to_owned(),
                    size_mb: s.file.size_bytes.map(|b| b / 1_000_000),
                    rules: s.reason.clone(),
                })
                .collect(),
        };
        let rules_ranking = ranked.clone();
        let accept = move |reply: crate::prompts::CandidateValidationReply| {
            let mut ranked = ranked;
            let mut judged_already = std::collections::HashSet::new();
            for judgement in &reply.candidates {
                // A candidate judged twice is blended once: the first judgement stands.
                if !judged_already.insert(judgement.number) {
                    continue;
                }
                let Some(scored) = judgement
                    .number
                    .checked_sub(1)
                    .filter(|&i| i < judged)
                    .map(|i| &mut ranked[i])
                else {
                    return Err(format!("candidate {} was not shown", judgement.number));
                };
                let model = judgement.confidence.min(100);
                scored.model_confidence = Some(model);
                if scored.name_match != NameMatch::Hash {
                    let blended = (u16::from(scored.confidence) + u16::from(model)).div_ceil(2);
                    scored.confidence = blended.min(99) as u8;
                }
                let reason = judgement.reason.trim();
                if !reason.is_empty() {
                    scored.reason = format!("{} Model: {reason}", scored.reason);
                }
            }
            if reply.candidates.is_empty() {
                return Err("the reply judges no candidate".into());
            }
            Ok(rank(ranked))
        };
        let fallback = async { StageOutput::heuristic(rules_ranking) };
        self.model.run(&context, 400, accept, fallback).await
    }
}

#[cfg(test)]
mod tests {
    use ferret_core::ModelSource;

    use super::*;

    fn file(name: &str, kind: Option<ModelType>, base: Option<&str>) -> ModelFile {
        ModelFile {
            file_name: name.into(),
            path: None,
            model_name: "m".into(),
            source: ModelSource::Civitai,
            model_type: kind,
            base_model: base.map(str::to_owned),
            size_bytes: None,
            sha256: None,
            download_url: None,
            page_url: None,
            gate: None,
        }
    }

    fn scored(request: &FileRequest, f: ModelFile) -> Scored {
        score(request, f, HitId("h".into()))
    }

    #[test]
    fn an_exact_name_of_the_wrong_type_loses_to_a_variant_of_the_right_one() {
        let request = FileRequest::new("detail.safetensors")
            .unwrap()
            .with_type(ModelType::Lora);
        let wrong = scored(
            &request,
            file("detail.safetensors", Some(ModelType::Checkpoint), None),
        );
        let variant = scored(
            &request,
            file("detail_fp16.safetensors", Some(ModelType::Lora), None),
        );
        assert!(wrong.type_conflict);
        let ranked = rank(vec![wrong, variant]);
        assert_eq!(ranked[0].file.file_name, "detail_fp16.safetensors");
        // An exact name exists among the candidates, so the variant is not certain enough.
        assert_eq!(status(&ranked, true), FindStatus::Uncertain);
        assert!(ranked[0].reason.contains("fp16"), "{}", ranked[0].reason);
    }

    #[test]
    fn a_variant_is_found_only_when_every_hub_answered() {
        let request = FileRequest::new("sdxl_vae_fp16.safetensors").unwrap();
        let ranked = rank(vec![scored(
            &request,
            file("sdxl_vae.safetensors", None, None),
        )]);
        assert_eq!(status(&ranked, true), FindStatus::Found);
        assert_eq!(status(&ranked, false), FindStatus::Uncertain);
        assert_eq!(status(&[], true), FindStatus::Uncertain);
    }

    #[test]
    fn a_base_model_conflict_makes_an_exact_name_uncertain() {
        let request = FileRequest::new("x.safetensors")
            .unwrap()
            .with_base_model("SDXL 1.0");
        let ranked = rank(vec![scored(
            &request,
            file("x.safetensors", None, Some("SD 1.5")),
        )]);
        assert_eq!(status(&ranked, true), FindStatus::Uncertain);
        assert!(ranked[0].reason.contains("SD 1.5"), "{}", ranked[0].reason);
    }

    #[test]
    fn the_exact_name_with_another_hash_is_another_file() {
        let mut request = FileRequest::new("x.safetensors").unwrap();
        request.sha256 = Some("a".repeat(64));
        let mut other = file("x.safetensors", None, None);
        other.sha256 = Some("b".repeat(64));
        let ranked = rank(vec![scored(&request, other)]);
        assert!(ranked[0].hash_conflict);
        assert_eq!(ranked[0].confidence, 30);
        assert_eq!(status(&ranked, true), FindStatus::Uncertain);
    }

    #[test]
    fn a_generic_name_in_several_models_of_one_hub_is_not_certain() {
        let request = FileRequest::new("diffusion_pytorch_model.safetensors").unwrap();
        let mut a = file("diffusion_pytorch_model.safetensors", None, None);
        a.model_name = "org/one".into();
        let mut b = a.clone();
        b.model_name = "org/two".into();
        assert_eq!(
            status(
                &rank(vec![
                    scored(&request, a.clone()),
                    scored(&request, b.clone())
                ]),
                true
            ),
            FindStatus::Uncertain
        );
        // The same bytes under two models are one file.
        a.sha256 = Some("c".repeat(64));
        b.sha256 = Some("c".repeat(64));
        assert_eq!(
            status(&rank(vec![scored(&request, a), scored(&request, b)]), true),
            FindStatus::Found
        );
    }

    #[test]
    fn a_variant_must_state_the_requested_type_and_a_checkpoint_loads_as_a_diffusion_model() {
        let request = FileRequest::new("flux_dev_fp8.safetensors")
            .unwrap()
            .with_type(ModelType::DiffusionModel);
        let untyped = rank(vec![scored(
            &request,
            file("flux_dev.safetensors", None, None),
        )]);
        assert_eq!(status(&untyped, true), FindStatus::Uncertain);
        let checkpoint = rank(vec![scored(
            &request,
            file("flux_dev.safetensors", Some(ModelType::Checkpoint), None),
        )]);
        assert!(!checkpoint[0].type_conflict);
        assert_eq!(status(&checkpoint, true), FindStatus::Found);
    }

    #[test]
    fn an_upscaler_is_not_held_to_the_workflows_base_model() {
        let request = FileRequest::new("4x-UltraSharp.pth")
            .unwrap()
            .with_type(ModelType::Upscaler)
            .with_base_model("SDXL");
        let ranked = rank(vec![scored(
            &request,
            file(
                "4x-UltraSharp.pth",
                Some(ModelType::Upscaler),
                Some("SD 1.5"),
            ),
        )]);
        assert!(!ranked[0].base_conflict);
        assert_eq!(status(&ranked, true), FindStatus::Found);
    }
}
