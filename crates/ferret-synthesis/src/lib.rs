//! `ferret-synthesis` writes the answer: text whose every `[n]` marker resolves to a [`Citation`]
//! of one of the hits it was given, and, when the question asks for a name, a date, a number,
//! yes or no or one of two options, that answer in a few words. The [`AnswerSynthesizer`] trait is
//! the stage; the [`ExtractiveSynthesizer`] implements it without a model: it reads from the
//! question's wording (or the analysis's reading of it) what kind of answer it wants and picks the
//! sentences that hold one. [`check_citations`] validates and renumbers the markers of an answer
//! written elsewhere, such as [`LlmSynthesizer`]'s, so both paths give the same guarantee: never
//! a marker without a source. [`split_sentences`] is the sentence splitter both use. Reports (a
//! planned search's, a research run's note) are written and rendered here too: the
//! [`ReportWriter`] and [`ReportEvaluator`] stages, the [`HeuristicReportWriter`], and
//! [`finalize_report`]. An error's answer is arranged by [`in_sections`], and what it tells the
//! reader to do read by the [`ActionExtractor`]; retrieved text is never an instruction
//! ([`addresses_the_agent`], [`is_dangerous_command`]).
//!
//! It must not depend on any backend crate (it writes from hits, whoever found them), nor on the
//! executor; models are reached only through `ferret-llm`.
//!
//! [`Citation`]: ferret_core::Citation

mod actions;
mod answer;
mod citations;
mod extractive;
mod factoid;
mod llm;
mod names;
mod prompts;
mod question;
mod report;
mod sections;
mod spans;
mod streamed;
mod untrusted;

pub use actions::{ActionExtractor, HeuristicActionExtractor};
pub use answer::{Answer, AnswerSynthesizer, EarlierTurn, Situation};
pub use citations::{check_citations, strip_markers};
pub use extractive::{ExtractiveSynthesizer, SynthesisConfig, SynthesisConfigError};
pub use ferret_core::sentences::split_sentences;
pub use llm::{LlmActionExtractor, LlmSynthesizer};
pub use prompts::{SynthesisContext, SynthesisReply};
pub use report::{
    finalize_report, report_title, HeuristicReportWriter, ReportEvaluator, ReportRequest,
    ReportWriter, StepEvidence, Verdict,
};
pub use sections::in_sections;
pub use untrusted::{addresses_the_agent, is_dangerous_command};
