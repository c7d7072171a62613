//! Model-backed versions of the four stages. Each asks its prompt's question, checks the reply
//! against the question (a small model may answer with words that are not there), and falls back
//! to its heuristic twin when the reply is missing, malformed or makes no sense.

use std::collections::{BTreeMap, HashSet};

use crate::{
    may_follow_up, AnalysisContext, AnalysisReply, DecompositionContext, DecompositionReply,
    FollowUpContext, FollowUpReply, FollowUpResolver, HeuristicFollowUpResolver, IntentContext,
    IntentReply, NextHopContext, NextHopReply, PriorTurn, RewriteContext, RewriteReply,
};
use ferret_core::text::{one_line, term_set};
use ferret_core::{Implementation, QueryForm, StageOutput};
use ferret_llm::{PromptSource, StageModel};

use crate::{
    root_cause, Analysis, Complexity, Decomposition, Entity, EntityKind, GuardrailConfig,
    HeuristicAnalyzer, HeuristicDecomposer, HeuristicIntentClassifier, HeuristicRewriter, Intent,
    IntentClassifier, IntentVerdict, QueryAnalyzer, QueryDecomposer, QueryRewriter, QueryType,
};
use crate::{BridgeFinder, Hop, HopFinder, HopRequest, QuestionShape};

pub(crate) const INTENTS: [Intent; 4] = [
    Intent::Search,
    Intent::Unclear,
    Intent::Unrelated,
    Intent::Greeting,
];
const QUERY_TYPES: [QueryType; 6] = [
    QueryType::ErrorDiagnosis,
    QueryType::VersionCompatibility,
    QueryType::HowTo,
    QueryType::ApiUsage,
    QueryType::Comparison,
    QueryType::Factual,
];

/// The model's word for one of `options`, matched case-insensitively; `-` and spaces count as `_`.
fn pick<T: Copy>(word: &str, options: &[T], name: impl Fn(T) -> &'static str) -> Option<T> {
    let word = word.trim().to_lowercase().replace(['-', ' '], "_");
    options.iter().copied().find(|o| name(*o) == word)
}

/// The intent guardrail with a model (the classification prompt).
#[derive(Debug, Clone)]
pub struct LlmIntentClassifier {
    model: StageModel,
    rules: HeuristicIntentClassifier,
}

impl LlmIntentClassifier {
    /// Classify with `model` for the domain of `guardrail`.
    pub fn new(model: StageModel, guardrail: GuardrailConfig) -> Self {
        Self {
            model,
            rules: HeuristicIntentClassifier::new(guardrail),
        }
    }
}

#[async_trait::async_trait]
impl IntentClassifier for LlmIntentClassifier {
    async fn classify(&self, question: &str) -> StageOutput<IntentVerdict> {
        let context = IntentContext {
            question: question.to_owned(),
            domain: self.rules.config().domain.clone(),
        };
        let accept = |reply: IntentReply| {
            let intent = pick(&reply.intent, &INTENTS, Intent::as_str)
                .ok_or_else(|| format!("unknown intent `{}`", reply.intent))?;
            Ok(IntentVerdict {
                intent,
                reason: reply.reason,
            })
        };
        self.model
            .run(&context, 48, accept, self.rules.classify(question))
            .await
    }
}

/// The analyzer with a model (the analysis prompt). Entities the model names are kept
/// only when they occur in the question.
#[derive(Debug, Clone)]
pub struct LlmAnalyzer {
    model: StageModel,
}

impl LlmAnalyzer {
    /// Analyse with `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait::async_trait]
impl QueryAnalyzer for LlmAnalyzer {
    async fn analyze(&self, question: &str) -> StageOutput<Analysis> {
        self.analyze_in(question, &BTreeMap::new()).await
    }

    async fn analyze_in(
        &self,
        question: &str,
        asker: &BTreeMap<String, String>,
    ) -> StageOutput<Analysis> {
        let context = AnalysisContext {
            question: question.to_owned(),
            query_types: QUERY_TYPES.iter().map(|t| t.as_str().to_owned()).collect(),
            context: asker.clone(),
        };
        let accept = |reply: AnalysisReply| {
            analysis_from(question, reply).map(|a| a.with_context(asker.clone()))
        };
        let fallback = async {
            let analysis = HeuristicAnalyzer.analyze(question).await;
            StageOutput {
                value: analysis.value.with_context(asker.clone()),
                ..analysis
            }
        };
        self.model.run(&context, 96, accept, fallback).await
    }
}

fn analysis_from(question: &str, reply: AnalysisReply) -> Result<Analysis, String> {
    let query_type = pick(&reply.query_type, &QUERY_TYPES, QueryType::as_str)
        .ok_or_else(|| format!("unknown query type `{}`", reply.query_type))?;
    let complexity = pick(
        &reply.complexity,
        &[Complexity::Simple, Complexity::Complex],
        Complexity::as_str,
    )
    .ok_or_else(|| format!("unknown complexity `{}`", reply.complexity))?;
    // The rules know entity kinds; the model's extra names are kept when the question has them.
    let rules = HeuristicAnalyzer.analysis(question);
    let mut entities = rules.entities;
    let lowered = question.to_lowercase();
    for text in reply.entities {
        let text = text.trim().to_owned();
        let known = entities.iter().any(|e| e.text.eq_ignore_ascii_case(&text));
        if !text.is_empty() && !known && lowered.contains(&text.to_lowercase()) {
            entities.push(Entity {
                kind: EntityKind::Name,
                text,
            });
        }
    }
    let intent = reply.intent.trim().to_lowercase().replace(' ', "_");
    let intent = if intent.is_empty() {
        query_type.intent_label().to_owned()
    } else {
        intent
    };
    Ok(Analysis {
        query_type,
        entities,
        intent,
        complexity,
        context: Default::default(),
        asked: rules.asked,
    })
}

/// The decomposer with a model (the decomposition prompt). A sub-query must share a
/// content word with the question; at most `max_sub_queries` are kept.
#[derive(Debug, Clone)]
pub struct LlmDecomposer {
    model: StageModel,
}

impl LlmDecomposer {
    /// Decompose with `model`.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait::async_trait]
impl QueryDecomposer for LlmDecomposer {
    async fn decompose(
        &self,
        question: &str,
        analysis: &Analysis,
        max_sub_queries: usize,
    ) -> StageOutput<Decomposition> {
        let context = DecompositionContext {
            question: question.to_owned(),
            entities: analysis.entities.iter().map(|e| e.text.clone()).collect(),
            max_sub_queries,
            context: analysis.context.clone(),
        };
        let question_terms = term_set(question);
        let accept = |reply: DecompositionReply| {
            let mut seen = HashSet::new();
            let parts: Vec<String> = reply
                .sub_queries
                .into_iter()
                .map(|q| q.trim().to_owned())
                .filter(|q| {
                    !q.is_empty()
                        && q.chars().count() <= 200
                        && !term_set(q).is_disjoint(&question_terms)
                })
                .filter(|q| seen.insert(q.to_lowercase()))
                .take(max_sub_queries)
                .collect();
            if parts.is_empty() {
                Err("no sub-query shares a word with the question".to_owned())
            } else {
                let root_cause = reply
                    .root_cause_hypothesis
                    .map(|h| one_line(h.trim()))
                    .filter(|h| !h.is_empty())
                    .or_else(|| root_cause(question, analysis));
                Ok(Decomposition {
                    sub_queries: parts,
                    root_cause,
                })
            }
        };
        self.model
            .run(
                &context,
                160,
                accept,
                HeuristicDecomposer.decompose(question, analysis, max_sub_queries),
            )
            .await
    }
}

/// The rewriter with a model (the rewrite prompt): a query of at most
/// [`HeuristicRewriter::MAX_CHARS`] characters that keeps at least one content word of the input.
/// A question's first search also runs its own words beside the model's query.
#[derive(Debug, Clone)]
pub struct LlmRewriter {
    model: StageModel,
}

impl LlmRewriter {
    /// Rewrite with `model`: keyword queries for the index, web queries for a web engine.
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

impl LlmRewriter {
    /// The model's query for `context`, the rules' `fallback` when the reply is unusable.
    async fn ask(&self, context: RewriteContext, fallback: String) -> StageOutput<String> {
        let query = context.query.clone();
        let input_terms = term_set(&query);
        let accept = |reply: RewriteReply| {
            let rewritten = reply.query.trim().trim_matches('"').trim().to_owned();
            if rewritten.is_empty() || rewritten.chars().count() > HeuristicRewriter::MAX_CHARS {
                Err(format!(
                    "the query must have 1 to {} characters, it has {}",
                    HeuristicRewriter::MAX_CHARS,
                    rewritten.chars().count()
                ))
            } else if !input_terms.is_empty() && term_set(&rewritten).is_disjoint(&input_terms) {
                Err(format!("`{rewritten}` shares no word with `{query}`"))
            } else {
                Ok(rewritten)
            }
        };
        self.model
            .run(&context, 64, accept, async {
                StageOutput::heuristic(fallback)
            })
            .await
    }
}

#[async_trait::async_trait]
impl QueryRewriter for LlmRewriter {
    async fn rewrite(&self, query: &str, analysis: &Analysis) -> StageOutput<String> {
        let context = RewriteContext {
            query: query.to_owned(),
            engine: "a keyword search engine".to_owned(),
            max_chars: HeuristicRewriter::MAX_CHARS,
            strategy: None,
            previous_queries: Vec::new(),
            web: false,
            context: analysis.context.clone(),
        };
        self.ask(context, HeuristicRewriter.rewritten(query, analysis))
            .await
    }

    /// Keywords and web queries are the model's; the question form stays the user's words.
    async fn rewrite_for(
        &self,
        query: &str,
        analysis: &Analysis,
        form: QueryForm,
    ) -> StageOutput<String> {
        match form {
            QueryForm::Keywords => self.rewrite(query, analysis).await,
            QueryForm::Question => StageOutput::heuristic(HeuristicRewriter.question(query)),
            QueryForm::Web => {
                let context = RewriteContext {
                    query: query.to_owned(),
                    engine: "a web search engine".to_owned(),
                    max_chars: HeuristicRewriter::MAX_CHARS,
                    strategy: None,
                    previous_queries: Vec::new(),
                    web: true,
                    context: analysis.context.clone(),
                };
                self.ask(context, HeuristicRewriter.web(query, analysis))
                    .await
            }
        }
    }

    /// The model's query, then the user's own words as the heuristic cleans them: keyword
    /// backends score those best, and a model's rewrite can drop what is asked ("How many
    /// members Ken Pruitt is a Republican?" lost "upper house of the legislature").
    async fn rewrite_covering(&self, query: &str, analysis: &Analysis) -> StageOutput<Vec<String>> {
        let StageOutput {
            value,
            implementation,
            llm_calls,
        } = self.rewrite(query, analysis).await;
        let mut queries = vec![value];
        for own in HeuristicRewriter.covering(query, analysis) {
            if !queries.iter().any(|q| q.eq_ignore_ascii_case(&own)) {
                queries.push(own);
            }
        }
        StageOutput {
            value: queries,
            implementation,
            llm_calls,
        }
    }
}

/// The hop finder with a model (the `next_hop` prompt): the model reads the results so far and
/// names the next query, or says the question is answered. A query that repeats one searched or
/// is too long is refused, and the heuristic [`BridgeFinder`] chooses instead. The model is not
/// asked when one result holds every word of the question.
#[derive(Debug, Clone)]
pub struct LlmHopFinder {
    model: StageModel,
    heuristic: BridgeFinder,
}

impl LlmHopFinder {
    /// Results shown to the model, best first.
    pub const SOURCES: usize = 5;
    /// Names the rules found that the model chooses among.
    pub const CANDIDATES: usize = 5;

    /// Find hops with `model`, falling back to `heuristic`.
    pub fn new(model: StageModel, heuristic: BridgeFinder) -> Self {
        Self { model, heuristic }
    }
}

#[async_trait::async_trait]
impl HopFinder for LlmHopFinder {
    async fn next_hop(&self, request: HopRequest<'_>) -> StageOutput<Option<Hop>> {
        // No model call when a hop is out of the question.
        if request.shape == QuestionShape::Simple
            || self
                .heuristic
                .one_result_answers(request.question, request.hits)
        {
            return StageOutput::heuristic(None);
        }
        let context = NextHopContext {
            question: request.question.to_owned(),
            searched: request.searched.to_vec(),
            sources: PromptSource::numbered(&request.hits[..request.hits.len().min(Self::SOURCES)]),
            candidates: self.heuristic.candidates(
                request.question,
                request.shape,
                request.hits,
                Self::CANDIDATES,
            ),
        };
        let searched: HashSet<String> = request
            .searched
            .iter()
            .map(|q| (request.fingerprint)(q))
            .collect();
        let accept = |reply: NextHopReply| {
            if reply.is_done() {
                return Ok(None);
            }
            let query = reply.query.trim().trim_matches('"').trim().to_owned();
            if query.chars().count() > HeuristicRewriter::MAX_CHARS {
                Err(format!(
                    "the query must have at most {} characters, it has {}",
                    HeuristicRewriter::MAX_CHARS,
                    query.chars().count()
                ))
            } else if searched.contains(&(request.fingerprint)(&query)) {
                Err(format!("`{query}` was searched already"))
            } else {
                Ok(Some(Hop::for_query(&query, request.question)))
            }
        };
        self.model
            .run(&context, 160, accept, self.heuristic.next_hop(request))
            .await
    }
}

/// Longest follow-up rewrite kept, as its prompt asks: a follow-up is short, and so is the
/// question it stands for.
const MAX_REWRITTEN_CHARS: usize = 300;

/// The follow-up reader with a model (the `follow_up` prompt): the model rewrites a thread's new
/// question to stand alone from the last turn. It is asked only when the question may lean on
/// that turn (see [`may_follow_up`]); a rewrite that brings in more than one word the question
/// and the last turn do not hold is refused (a small model may answer the question instead of
/// rewriting it), and the rules read the question instead.
#[derive(Debug, Clone)]
pub struct LlmFollowUpResolver {
    model: StageModel,
}

impl LlmFollowUpResolver {
    /// Read follow-ups with `model`, falling back to [`HeuristicFollowUpResolver`].
    pub fn new(model: StageModel) -> Self {
        Self { model }
    }
}

#[async_trait::async_trait]
impl FollowUpResolver for LlmFollowUpResolver {
    async fn resolve(&self, question: &str, prior: &PriorTurn<'_>) -> StageOutput<Option<String>> {
        if !may_follow_up(question) {
            return StageOutput::new(
                None,
                Implementation::Heuristic {
                    why: "the question names what it asks about: no model call".into(),
                },
            );
        }
        let context = FollowUpContext {
            question: question.trim().to_owned(),
            earlier_question: prior.question.to_owned(),
            earlier_answer: prior.short_answer.map(str::to_owned),
            cited: prior.cited.iter().map(|t| (*t).to_owned()).collect(),
        };
        let mut known = term_set(question);
        known.extend(term_set(prior.question));
        known.extend(prior.short_answer.map(term_set).unwrap_or_default());
        for title in &prior.cited {
            known.extend(term_set(title));
        }
        let accept = |reply: FollowUpReply| {
            let rewritten = one_line(reply.question.trim().trim_matches('"'));
            if reply.standalone
                || rewritten.is_empty()
                || rewritten.eq_ignore_ascii_case(question.trim())
            {
                return Ok(None);
            }
            if rewritten.chars().count() > MAX_REWRITTEN_CHARS {
                return Err(format!(
                    "the question must have at most {MAX_REWRITTEN_CHARS} characters"
                ));
            }
            let mut new: Vec<String> = term_set(&rewritten)
                .into_iter()
                .filter(|term| !known.contains(term))
                .collect();
            // One new word lets the model rephrase ("born" for "birth"); more is invention.
            if new.len() > 1 {
                new.sort();
                return Err(format!(
                    "the rewrite adds {}, which neither the question nor the last turn holds",
                    new.join(", ")
                ));
            }
            Ok(Some(rewritten))
        };
        self.model
            .run(
                &context,
                120,
                accept,
                HeuristicFollowUpResolver.resolve(question, prior),
            )
            .await
    }
}
