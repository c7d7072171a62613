use serde::{Deserialize, Serialize};

/// Which implementation of a stage ran, and why that one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Implementation {
    /// The deterministic rules ran.
    Heuristic {
        /// Why the rules ran rather than a model (no model configured, model failed, ...).
        why: String,
    },
    /// A language model ran.
    Llm {
        /// The model's name.
        model: String,
        /// The first answer did not parse and the repair request's did.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        repaired: bool,
    },
}

impl Implementation {
    /// The heuristic ran because no model is configured for the stage: none at all, or one the
    /// configuration keeps off this stage.
    pub fn heuristic_default() -> Self {
        Self::Heuristic {
            why: "no language model for this stage".into(),
        }
    }
}

/// How a stage's model call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LlmCallOutcome {
    /// The first answer parsed.
    Parsed,
    /// The first answer did not parse; the repair request's answer did.
    Repaired,
    /// The reply parsed, but the stage's own checks refused it (a label it does not know, a
    /// citation that points nowhere): the stage fell back to its heuristic.
    Refused {
        /// Why the stage refused it.
        error: String,
    },
    /// No usable answer (the call failed, or the reply did not parse): the stage fell back to
    /// its heuristic.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// One structured model call a stage made (a first request and, when needed, its repair).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LlmCall {
    /// The stage that called (`intent`, `grading`, ...); not `stage`, which names the trace step.
    pub caller: String,
    /// The model that answered.
    pub model: String,
    /// Requests made: 1, or 2 with a repair.
    pub requests: u32,
    /// Prompt tokens over those requests.
    pub prompt_tokens: u64,
    /// Completion tokens over those requests.
    pub completion_tokens: u64,
    /// Cost in US dollars at the configured prices (0 when the model has no price).
    pub cost_usd: f64,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: LlmCallOutcome,
    /// The structured-output dialect the provider was asked in (`json_schema`,
    /// `json_object_schema`, `json_object`, `prompt_only`), when it has dialects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
    /// Results the prompt showed condensed, when some were longer than a prompt shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condensed: Option<Condensation>,
}

/// Results a prompt showed condensed to the passages that mention the question's terms: summarised
/// by the model where one that writes answers is configured, else cut to those passages. The
/// results themselves keep their text; citations point at them whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Condensation {
    /// Results condensed.
    pub sources: u32,
    /// Prompt tokens saved, estimated at four characters a token.
    pub tokens_saved: u64,
    /// Of those results, the ones the model summarised (the others were cut to their passages).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub by_model: u32,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// One fact about one stage of a search. The trace is the list of these, in order; the stream
/// of [`Event`](crate::Event)s carries the same steps as they happen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", tag = "stage")]
#[non_exhaustive]
pub enum TraceStep {
    /// The guardrail classified the question.
    Intent {
        /// `search`, `unclear`, `unrelated` or `greeting`.
        outcome: String,
        /// Why this outcome.
        reason: String,
        /// Which classifier ran.
        implementation: Implementation,
    },
    /// The analyzer described the question.
    Analysis {
        /// Query type (error_diagnosis, version_compatibility, how_to, api_usage, ...).
        query_type: String,
        /// Entities found, as `kind: value`.
        entities: Vec<String>,
        /// `simple` or `complex`.
        complexity: String,
        /// Which analyzer ran.
        implementation: Implementation,
    },
    /// The strategy that runs, and why: the configuration named it, or the automatic choice read
    /// the question so.
    Strategy {
        /// The strategy run.
        chosen: crate::Strategy,
        /// Why this one.
        reason: crate::StrategyReason,
    },
    /// The tools a tool-selection loop or a plan may call.
    Tools {
        /// Their names, as a selector or a plan calls them.
        names: Vec<String>,
        /// Most tool calls or plan steps.
        max_steps: u32,
    },
    /// The queries sent to the backends for one attempt, after decomposition and rewriting.
    Queries {
        /// Attempt number, from 1.
        attempt: u32,
        /// The queries.
        queries: Vec<String>,
        /// How they were derived (decomposed, rewritten, refined: broaden / narrow).
        reason: String,
        /// Which stage produced them.
        implementation: Implementation,
    },
    /// One request to one backend.
    BackendCall {
        /// Backend name.
        backend: String,
        /// Query sent.
        query: String,
        /// Wall time in milliseconds (for a cache hit, the lookup time).
        duration_ms: u64,
        /// Answered from the cache.
        cache_hit: bool,
        /// Waited on an identical call already in flight instead of calling.
        coalesced: bool,
        /// Hits returned (0 on error).
        hits: usize,
        /// The error, when the call failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Results were fused and graded.
    Grading {
        /// Attempt number, from 1.
        attempt: u32,
        /// Hits graded.
        graded: usize,
        /// Hits kept: at or above the keep threshold, or relevant through other results.
        kept: usize,
        /// Of the kept hits, those kept for how they link to other results (a hop's page, a page
        /// the top results name, results covering the question together), not for their words.
        #[serde(default, skip_serializing_if = "is_zero")]
        linked: usize,
        /// Hits at or above the good threshold.
        good: usize,
        /// `high`, `medium` or `low`.
        quality: String,
        /// Suggested refinement when quality is low (`broaden` / `narrow` and the query).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_suggestion: Option<String>,
        /// Which grader ran.
        implementation: Implementation,
    },
    /// The refine loop finished an attempt.
    Attempt {
        /// Attempt number, from 1.
        attempt: u32,
        /// Hits this attempt found that no earlier attempt had.
        new_hits: usize,
        /// What the loop decided (`stop: answered`, `retry: broaden`, ...).
        decision: String,
    },
    /// One step of the tool-selection loop: the tool the selector chose and what it found.
    ToolStep {
        /// Step number, from 1.
        step: u32,
        /// The tool called (`search`, `recent`, `date_range`, `search_<backend>`), or `DONE`.
        tool: String,
        /// Why the selector chose it.
        reasoning: String,
        /// The query the tool searched (empty for `DONE`).
        query: String,
        /// Hits the call returned.
        results: usize,
        /// Hits no earlier step had found.
        new_results: usize,
        /// Why the call could not be made, when it could not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Which selector chose (a model, or the heuristic and why).
        implementation: Implementation,
    },
    /// The plan a planner wrote, as it will run.
    Plan {
        /// The plan, one `#En = Tool[argument]` step per line.
        plan: String,
        /// Problems found in earlier drafts (validation errors, an evaluator's feedback) that
        /// led to this one; empty for a first draft that passed.
        problems: Vec<String>,
        /// Which planner wrote it.
        implementation: Implementation,
    },
    /// One step of a plan ran.
    PlanStep {
        /// Its variable, as `E1`.
        variable: String,
        /// The tool called.
        tool: String,
        /// The argument, earlier results substituted.
        argument: String,
        /// Hits the step found.
        results: usize,
        /// Hits no earlier step had found.
        new_results: usize,
        /// Wall time of the step in milliseconds.
        duration_ms: u64,
        /// Why the step could not run, when it could not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The model-file finder ranked the files the hubs returned.
    Ranking {
        /// Found or uncertain.
        status: crate::FindStatus,
        /// The candidates, best first, each with what every rule did to its confidence.
        candidates: Vec<crate::RankedCandidate>,
        /// Which validator judged: the rules alone, or a model with them.
        implementation: Implementation,
    },
    /// An evaluator judged a plan or a report.
    Verdict {
        /// `plan` or `report`.
        subject: String,
        /// Whether it passed.
        acceptable: bool,
        /// What to change, when it did not.
        feedback: String,
        /// Which evaluator judged.
        implementation: Implementation,
    },
    /// A stage called a language model.
    LlmCall(LlmCall),
    /// The answer was written.
    Synthesis {
        /// Sentences in the answer.
        sentences: usize,
        /// Distinct sources cited.
        citations: usize,
        /// Markers removed because they pointed at no source.
        dropped_markers: usize,
        /// Which synthesizer ran.
        implementation: Implementation,
    },
    /// The thread the question belongs to: a thread not seen before (or forgotten) starts here.
    Thread {
        /// The thread's id, as the caller gave it.
        id: String,
        /// No turn of it is remembered: this question starts it.
        new: bool,
        /// Turns of it remembered before this question.
        turns: usize,
    },
    /// The question continues its thread ("and in 2019?", "the second one", "when was he
    /// born?") and was rewritten from the thread's last turn before anything ran.
    FollowUp {
        /// The question as asked.
        asked: String,
        /// The question searched.
        resolved: String,
        /// Which reader rewrote it.
        implementation: Implementation,
    },
    /// The question repeats an earlier one of its thread, whose answer is given again.
    Repeat {
        /// The earlier question's number in the thread.
        turn: u32,
        /// How the repeat was recognised.
        matched_by: crate::RepeatMatch,
    },
    /// What the answer tells its reader to do was read.
    Actions {
        /// Version changes found.
        version_changes: usize,
        /// File changes found.
        file_changes: usize,
        /// Commands found.
        commands: usize,
        /// Which extractor ran.
        implementation: Implementation,
    },
}

/// Everything the stages of one search reported, in order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Trace {
    /// The steps, in the order they happened.
    pub steps: Vec<TraceStep>,
}

impl Trace {
    /// Append a step.
    pub fn push(&mut self, step: TraceStep) {
        self.steps.push(step);
    }
}

/// What a pipeline stage returns: its result and which implementation produced it.
///
/// Stages do not fail: an LLM stage that cannot get a usable answer falls back to its heuristic
/// twin and says so in `implementation`.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOutput<T> {
    /// The stage's result.
    pub value: T,
    /// Which implementation produced it, and why that one.
    pub implementation: Implementation,
    /// Model calls made on the way, for the trace and the search's usage (empty for heuristics).
    pub llm_calls: Vec<LlmCall>,
}

impl<T> StageOutput<T> {
    /// A result from the heuristic implementation, run because no model is configured.
    pub fn heuristic(value: T) -> Self {
        Self::new(value, Implementation::heuristic_default())
    }

    /// A result with no model calls behind it.
    pub fn new(value: T, implementation: Implementation) -> Self {
        Self {
            value,
            implementation,
            llm_calls: Vec::new(),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
