//! The research tools over a searcher's own backends, through its executor: the knowledge base
//! is every backend that is neither a web search engine nor a model hub, the web every engine.

use std::sync::Arc;
use std::time::Duration;

use ferret_agent::Agent;
use ferret_core::{Budget, Filters, Hit, QueryForm, SearchOptions, SearchQuery};
use ferret_exec::{CallBudget, ExecRequest};
use ferret_research::{ResearchToolError, ResearchTools};

/// Searches for a research run, held to one call budget for the whole run.
pub struct BackendResearchTools {
    agent: Agent,
    knowledge: Vec<String>,
    web: Vec<String>,
    budget: Arc<CallBudget>,
    call_deadline: Duration,
}

impl std::fmt::Debug for BackendResearchTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendResearchTools")
            .field("knowledge", &self.knowledge)
            .field("web", &self.web)
            .finish_non_exhaustive()
    }
}

impl BackendResearchTools {
    /// The tools over `agent`'s backends, spending at most `budget`'s backend calls and wall
    /// time over the whole run.
    pub(crate) fn new(agent: Agent, budget: &Budget) -> Self {
        let executor = agent.executor();
        let web: Vec<String> = executor
            .backends_asking(QueryForm::Web)
            .into_iter()
            .map(str::to_owned)
            .collect();
        let knowledge = executor
            .backends()
            .into_iter()
            .filter(|(name, capabilities)| {
                capabilities.model_hub.is_none() && !web.iter().any(|w| w == name)
            })
            .map(|(name, _)| name.to_owned())
            .collect();
        Self {
            knowledge,
            web,
            budget: Arc::new(
                CallBudget::new(budget.max_backend_calls, budget.wall_time)
                    .with_paid_limit(budget.max_paid_units),
            ),
            call_deadline: budget.call_deadline,
            agent,
        }
    }

    async fn search(
        &self,
        backends: &[String],
        query: &str,
        options: &SearchOptions,
        limit: usize,
    ) -> Result<Vec<Hit>, ResearchToolError> {
        let queries = [SearchQuery::plain(query)];
        let mut hits: Vec<Hit> = Vec::new();
        let mut failures: Vec<String> = Vec::new();
        let mut retryable = false;
        for backend in backends {
            let outcome = self
                .agent
                .executor()
                .execute_on(
                    &ExecRequest {
                        cache: ferret_exec::CacheUse::Read,
                        queries: &queries,
                        filters: &Filters::default(),
                        options,
                        limit,
                        call_deadline: self.call_deadline,
                        backend: Some(backend),
                    },
                    &self.budget,
                )
                .await;
            failures.extend(outcome.failures.iter().map(|f| f.error.to_string()));
            retryable |= outcome
                .failures
                .iter()
                .any(|f| f.error.retry.is_retryable());
            if outcome.budget_exhausted {
                failures.push("the run's call budget ran out".into());
            }
            hits.extend(outcome.hits);
        }
        if hits.is_empty() && !failures.is_empty() {
            return Err(ResearchToolError::Failed {
                failures: failures.join("; "),
                retryable,
            });
        }
        hits.truncate(limit);
        Ok(hits)
    }
}

#[async_trait::async_trait]
impl ResearchTools for BackendResearchTools {
    async fn file_search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, ResearchToolError> {
        if self.knowledge.is_empty() {
            return Err(ResearchToolError::NothingToSearch {
                what: "there is no knowledge base to search".into(),
            });
        }
        self.search(&self.knowledge, query, &SearchOptions::default(), limit)
            .await
    }

    fn knowledge_changed(&self) {
        self.agent.forget_results();
    }

    fn searches_web(&self) -> bool {
        !self.web.is_empty()
    }

    async fn web_search(
        &self,
        query: &str,
        site: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Hit>, ResearchToolError> {
        let options = SearchOptions {
            include_domains: site.map(str::to_owned).into_iter().collect(),
            ..SearchOptions::default()
        };
        self.search(&self.web, query, &options, limit).await
    }
}
