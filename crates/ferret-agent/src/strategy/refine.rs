//! The refine loop: search, grade, and while the results are weak search again with the
//! grader's suggestion (broadened or narrowed), until they are good, nothing new comes back, a
//! query would repeat, or the budget's attempts are used.

use async_trait::async_trait;
use ferret_query_intel::QuestionShape;

use super::attempts::Attempts;
use super::SearchStrategy;
use crate::run::{Ending, SearchRun};

/// Retry with a refined query while results are weak, within the budget.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Refine;

#[async_trait]
impl SearchStrategy for Refine {
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending {
        Attempts {
            shape: QuestionShape::Simple,
            max_attempts: run.query.budget.max_attempts,
        }
        .run(run)
        .await
    }
}
