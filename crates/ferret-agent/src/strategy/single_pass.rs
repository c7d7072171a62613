//! Single pass: search once, grade, answer from what was kept.

use async_trait::async_trait;
use ferret_query_intel::QuestionShape;

use super::attempts::Attempts;
use super::SearchStrategy;
use crate::run::{Ending, SearchRun};

/// One attempt: search, grade, answer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SinglePass;

#[async_trait]
impl SearchStrategy for SinglePass {
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending {
        Attempts {
            shape: QuestionShape::Simple,
            max_attempts: 1,
        }
        .run(run)
        .await
    }
}
