use ferret_core::{HitId, Implementation, TraceStep};
use serde::{Deserialize, Serialize};

/// The grade of one hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitGrade {
    /// The hit graded.
    pub hit_id: HitId,
    /// Relevance to the question, in `0.0..=1.0`, never NaN.
    pub relevance: f32,
    /// At or above the keep threshold.
    pub kept: bool,
    /// At or above the good threshold (and kept).
    pub good: bool,
    /// Why this relevance, in a few words.
    pub reason: String,
    /// Set when a strategy keeps the hit for how it links to other results rather than for its
    /// own words (a hop's page, a page the top results name): the grader's reason stays its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked: Option<LinkedRelevance>,
}

impl HitGrade {
    /// Keep this hit for `why`, whatever its relevance; the first such decision stays.
    pub fn keep_as(&mut self, why: LinkedRelevance) {
        self.kept = true;
        self.linked.get_or_insert(why);
    }
}

/// Why a hit is relevant through other results, though a grader reading its words against the
/// question would not keep it: the decisions multi-hop search and plans make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LinkedRelevance {
    /// The page a hop searched for, relevant through the result that named it.
    HopPage {
        /// The name the hop followed.
        entity: String,
    },
    /// A page the top results name.
    NamedByTopResult,
    /// One of the top results that together cover the question, though none does alone.
    CoversJointly,
    /// A grader keeps it for the query of the plan step that found it.
    PlanStep {
        /// That step's query.
        query: String,
    },
}

/// The overall verdict on a set of hits (a model's `overall_quality`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quality {
    /// Enough good hits, or one that answers the question outright.
    High,
    /// Some good hits: usable, no retry.
    Medium,
    /// No good hit (or no hit at all): retry if the budget allows.
    Low,
}

impl Quality {
    /// `high`, `medium` or `low`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::High => "high",
            Self::Medium => "medium",
            Self::Low => "low",
        }
    }

    fn rank(self) -> u8 {
        match self {
            Self::Low => 0,
            Self::Medium => 1,
            Self::High => 2,
        }
    }
}

/// Worse is less: `Low < Medium < High`.
impl Ord for Quality {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl PartialOrd for Quality {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Quality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to change the query for the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RetryStrategy {
    /// Too narrow, nothing matched: fewer, more general terms.
    Broaden,
    /// Too broad, matches were loose: stress the terms the hits missed.
    Narrow,
}

impl RetryStrategy {
    /// `broaden` or `narrow`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Broaden => "broaden",
            Self::Narrow => "narrow",
        }
    }
}

impl std::fmt::Display for RetryStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The next query to try (a model's `retry_suggestion`). Never empty, never the question itself.
///
/// Built from the question's own words, by the rules below (the refinement strategies,
/// without synonyms, which need a model).
///
/// - Broaden (nothing came back, or fewer than half the hits were kept: too narrow) drops the most
///   specific part: quote marks and stop words always go; then words with digits (years, versions,
///   numbers) if other words remain; otherwise, when the question had no quotes and has two or
///   more content words, the single most specific word: the one fewest hits contain, then a
///   capitalised word that does not open the question (a name), then the longest, then the last.
/// - Narrow (at least half the hits kept, none good: too broad) keeps every content word and puts
///   in quotes (a must-have in web search syntax; ignored by BM25 tokenizers) the words missing
///   from most hits; if no word is missing from most hits, the words fewest hits contain; if all
///   words are equally common, the whole question as one quoted phrase. When narrowing cannot
///   change the query, broadening is tried instead.
///
/// A suggestion equal to the question (same content terms, same quoting) is never returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrySuggestion {
    /// Broaden or narrow.
    pub strategy: RetryStrategy,
    /// The refined query.
    pub query: String,
}

impl std::fmt::Display for RetrySuggestion {
    /// `broaden: <query>`, the form the trace records.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.strategy, self.query)
    }
}

/// Everything the grader says about one set of hits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grades {
    /// One grade per hit, in the order the hits were given.
    pub per_hit: Vec<HitGrade>,
    /// The overall verdict.
    pub quality: Quality,
    /// Search again if the budget allows; true exactly when the quality is low.
    pub should_retry: bool,
    /// The query to search with next. `None` when no retry is needed, or when no rule could change
    /// the query (a retry is still advised; the caller may rephrase by other means or stop).
    pub suggestion: Option<RetrySuggestion>,
}

impl Grades {
    /// How many hits were kept.
    pub fn kept(&self) -> usize {
        self.per_hit.iter().filter(|g| g.kept).count()
    }

    /// How many hits were kept for how they link to other results rather than for their words.
    pub fn linked(&self) -> usize {
        self.per_hit.iter().filter(|g| g.linked.is_some()).count()
    }

    /// How many hits were good.
    pub fn good(&self) -> usize {
        self.per_hit.iter().filter(|g| g.good).count()
    }

    /// The trace step recording these grades for `attempt` (from 1).
    pub fn trace_step(&self, attempt: u32, implementation: Implementation) -> TraceStep {
        TraceStep::Grading {
            attempt,
            graded: self.per_hit.len(),
            kept: self.kept(),
            linked: self.linked(),
            good: self.good(),
            quality: self.quality.as_str().to_owned(),
            retry_suggestion: self.suggestion.as_ref().map(ToString::to_string),
            implementation,
        }
    }
}
