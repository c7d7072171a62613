//! What can stop a research run, and what a research search reports when it finds nothing to
//! use. A step that fails is not an error of the run: it is recorded in the run, and the note is
//! written from what the other steps found.

use ferret_knowledge::RegistryError;

/// Why a research run could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResearchError {
    /// The knowledge base's registry, which the syllabus's file names are sorted against, could
    /// not be read.
    #[error("the knowledge base's registry could not be read: {0}")]
    Registry(#[from] RegistryError),
    /// The plan the rules wrote failed its own checks: a fault of the rules, not of the
    /// syllabus or the model.
    #[error("the rules' research plan is not valid: {problem}")]
    RulesPlan {
        /// What the checks found.
        problem: String,
    },
}

impl ResearchError {
    /// Can running the research again help? Reading the registry may succeed once whatever
    /// held or broke it is gone; the rules' plan will be the same.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Registry(_))
    }
}

/// Why a research search gave no hits to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResearchToolError {
    /// There is nothing to search: no knowledge base, or no web backend.
    #[error("{what}")]
    NothingToSearch {
        /// What is missing, as the run's record shows it.
        what: String,
    },
    /// Every backend asked failed.
    #[error("{failures}")]
    Failed {
        /// Their failures, joined.
        failures: String,
        /// Whether asking again may help (a timeout, a rate limit, a server error).
        retryable: bool,
    },
}
