//! Multi-hop search: after each search, follow the name the results lead to (a bridge) or the
//! compared name they lack, until the results cover the question; weak results still refine.
//! How linked results count as relevant is in `linking`.

use async_trait::async_trait;
use ferret_query_intel::QuestionShape;

use super::attempts::Attempts;
use super::SearchStrategy;
use crate::run::{Ending, SearchRun};

/// Multi-hop search of a question of a known shape, or of whatever shape the question has
/// (a question that reads as simple is searched as a bridge: the caller asked to hop).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MultiHop;

impl MultiHop {
    /// Search a question of `shape`, which is not simple.
    pub(super) async fn run_shape(run: &mut SearchRun<'_>, shape: QuestionShape) -> Ending {
        Attempts {
            shape,
            max_attempts: run.query.budget.max_attempts,
        }
        .run(run)
        .await
    }
}

#[async_trait]
impl SearchStrategy for MultiHop {
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending {
        let shape = match run.stages.bridge.shape(run.question(), &run.analysis) {
            QuestionShape::Simple => QuestionShape::Bridge,
            shape => shape,
        };
        Self::run_shape(run, shape).await
    }
}
