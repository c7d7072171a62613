//! The model-file finder: plan the searches for a file's name, run them on the model hubs at
//! once through the executor, rank what comes back by the rules (and a model's judgement), and
//! answer with the status and the candidates.

use std::collections::HashSet;

use async_trait::async_trait;
use ferret_core::{
    BackendFailure, Citation, FileRequest, Filters, FindStatus, Hit, Implementation, ModelFile,
    ModelFind, ModelSource, QueryForm, SearchOptions, SearchQuery, StopReason, TraceStep,
};
use ferret_exec::ExecRequest;
use ferret_synthesis::Answer;
use tracing::Instrument;

use super::SearchStrategy;
use crate::find_model::{
    name_conflicts, rank, recorded_steps, score, status, FindStep, MAX_FIND_STEPS,
};
use crate::run::{Ending, SearchRun};

/// Files asked of each hub per search: enough for a model's versions and formats.
const FILES_PER_CALL: usize = 20;
/// Candidates the response lists at most, whatever the query's limit.
const MAX_CANDIDATES: usize = 10;

/// Find the model file the query names.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FindModel;

#[async_trait]
impl SearchStrategy for FindModel {
    async fn run(&self, run: &mut SearchRun<'_>) -> Ending {
        let request = match run.file_request.clone() {
            Some(request) => request,
            None => match FileRequest::new(run.query.text()) {
                Ok(request) => request,
                Err(error) => {
                    return Ending::message(
                        StopReason::Refused,
                        format!("There is no model file to find: {error}"),
                    )
                }
            },
        };
        let hubs = Hubs::of(run.executor);
        let sources = hubs.sources();
        if sources.is_empty() {
            return Ending::message(
                StopReason::Refused,
                "No model hub is configured: the finder searches the backends that declare one (Civitai, the HuggingFace Hub).",
            );
        }
        // The workflow's own evidence (a hash, a recorded address) is searched first; when it
        // gives the file itself, by name or hash, nothing else is asked.
        let recorded = recorded_steps(&request, &sources);
        let (mut hits, mut answered) = search(run, &hubs, &recorded, &request).await;
        let settled = hits
            .iter()
            .any(|hit| ModelFile::from_hit(hit).is_some_and(|file| is_the_file(&request, &file)));
        // A request by hash alone carries the hash as its name: there is no name to search.
        let by_hash_alone = request.sha256.as_deref() == Some(request.file_name.as_str());
        let (mut planned, implementation) = if by_hash_alone || settled {
            (Vec::new(), Implementation::heuristic_default())
        } else {
            run.rec
                .stage(run.stages.model_search.plan(&request, &sources).await)
        };
        // Pages of the hubs' sites the web finds for the exact name come before the plan: a
        // page names the repository or model, whatever either is called.
        if !(by_hash_alone || settled) {
            let pages = web_steps(run, &request, &sources).await;
            planned.splice(0..0, pages);
        }
        let mut seen: Vec<FindStep> = recorded.clone();
        planned.retain(|step| {
            let new = !seen.contains(step);
            seen.push(step.clone());
            new
        });
        planned.truncate(MAX_FIND_STEPS.saturating_sub(recorded.len()));
        let steps: Vec<FindStep> = recorded.iter().chain(&planned).cloned().collect();
        run.rec.step(TraceStep::Plan {
            plan: steps
                .iter()
                .map(FindStep::line)
                .collect::<Vec<_>>()
                .join("\n"),
            problems: Vec::new(),
            implementation,
        });
        let (more, also_answered) = search(run, &hubs, &planned, &request).await;
        answered.extend(also_answered);
        for hit in more {
            if !hits.iter().any(|h| h.id == hit.id) {
                hits.push(hit);
            }
        }
        let asked: HashSet<&str> = steps
            .iter()
            .filter_map(|s| hubs.backend(s.source))
            .collect();
        let failed: HashSet<&str> = run
            .gathered
            .failures
            .iter()
            .map(|f| f.error.backend.as_str())
            .filter(|backend| asked.contains(backend))
            .collect();
        let every_hub_answered = failed.is_empty();
        let no_hub_answered = !asked.is_empty() && answered.is_empty();
        let scored: Vec<_> = hits
            .iter()
            .filter_map(|hit| {
                let file = ModelFile::from_hit(hit)?;
                Some(score(&request, file, hit.id.clone()))
            })
            .collect();
        let (ranked, implementation) = run
            .rec
            .stage(run.stages.validator.validate(&request, rank(scored)).await);
        let ranked = name_conflicts(ranked);
        let status = if no_hub_answered && ranked.is_empty() {
            FindStatus::Unsearched
        } else {
            status(&ranked, every_hub_answered)
        };
        let shown = &ranked[..ranked.len().min(MAX_CANDIDATES)];
        run.rec.step(TraceStep::Ranking {
            status,
            candidates: shown.iter().map(|s| s.ranked()).collect(),
            implementation,
        });
        let find = ModelFind {
            requested: request.clone(),
            status,
            candidates: shown.iter().map(|s| s.candidate(&request)).collect(),
        };
        // The candidates' hits first, in their order, then whatever else was found.
        let order: Vec<&str> = find
            .candidates
            .iter()
            .map(|c| c.hit_id.0.as_str())
            .collect();
        let mut hits = hits;
        hits.sort_by_key(|hit| {
            order
                .iter()
                .position(|id| *id == hit.id.0)
                .unwrap_or(usize::MAX)
        });
        let answer = find.best().and_then(|best| {
            // Every candidate is read from a hit the response lists.
            let cited = hits.iter().find(|h| h.id == best.hit_id)?;
            let verdict = match status {
                FindStatus::Found => "Found",
                FindStatus::Uncertain | FindStatus::Unsearched => "Not certain; the closest is",
            };
            let folder = best
                .folder
                .as_deref()
                .map(|f| format!(" It belongs in `{f}`."))
                .unwrap_or_default();
            Some(Answer {
                text: format!(
                    "{verdict} `{}` in {} on {} [1], confidence {}: {}{folder}",
                    best.file_name, best.name, best.source, best.confidence, best.reason
                ),
                citations: vec![Citation {
                    marker: 1,
                    hit_id: cited.id.clone(),
                    title: cited.title.to_string(),
                    url: cited.url.clone(),
                }],
                short: None,
                sentences: 1,
                dropped_markers: 0,
            })
        });
        let message = answer
            .is_none()
            .then(|| nothing_found(&request.file_name, &hubs, &run.gathered.failures));
        Ending {
            stop_reason: if answer.is_some() {
                StopReason::Answered
            } else {
                StopReason::NoProgress
            },
            hits,
            answer,
            report: None,
            model_file: Some(find),
            message,
        }
    }
}

/// Web results wanted for a file's exact name.
const WEB_RESULTS: usize = 10;
/// Hub pages a web search may add to a file's plan, per hub.
const PAGES_PER_HUB: usize = 2;

/// Steps asking each hub for what is at the pages of its site that a web search finds for the
/// file's exact name, when a web search engine is configured. The hub reads the model or
/// repository out of the address and asks its own API: nothing fetches the page.
async fn web_steps(
    run: &mut SearchRun<'_>,
    request: &FileRequest,
    sources: &[ModelSource],
) -> Vec<FindStep> {
    let engines: Vec<String> = run
        .executor
        .backends_asking(QueryForm::Web)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if engines.is_empty() {
        return Vec::new();
    }
    let queries = [SearchQuery::plain(format!("\"{}\"", request.file_name))];
    let options = SearchOptions {
        include_domains: sources.iter().map(|s| s.site().to_owned()).collect(),
        ..SearchOptions::default()
    };
    let filters = Filters {
        access: run.query.filters.access.clone(),
        ..Filters::default()
    };
    let mut steps: Vec<FindStep> = Vec::new();
    for engine in &engines {
        let exec = ExecRequest {
            cache: run.cache_use(),
            queries: &queries,
            filters: &filters,
            options: &options,
            limit: WEB_RESULTS,
            call_deadline: run.query.budget.call_deadline,
            backend: Some(engine),
        };
        let outcome = run.executor.execute_on(&exec, &run.calls).await;
        for hit in run.absorb(outcome, 1).hits {
            let Some(address) = hit.url.as_deref().and_then(|u| url::Url::parse(u).ok()) else {
                continue;
            };
            let Some(source) = ModelSource::of_address(&address).filter(|s| sources.contains(s))
            else {
                continue;
            };
            let step = FindStep {
                source,
                query: ferret_core::address_query(address.as_str()),
            };
            let per_hub = steps.iter().filter(|s| s.source == source).count();
            if per_hub < PAGES_PER_HUB && !steps.contains(&step) {
                steps.push(step);
            }
        }
    }
    steps
}

/// Whether `file` is the one `request` asks for: its name, or its hash when one is known.
fn is_the_file(request: &FileRequest, file: &ModelFile) -> bool {
    let hashed = request.sha256.is_some() && file.sha256 == request.sha256;
    hashed || file.file_name.eq_ignore_ascii_case(&request.file_name)
}

/// The model hubs among the executor's backends, as their capabilities declare them: the first
/// backend declaring a hub searches it.
struct Hubs(Vec<(ModelSource, String)>);

impl Hubs {
    fn of(executor: &ferret_exec::Executor) -> Self {
        let backends = executor.backends();
        Self(
            ModelSource::ALL
                .into_iter()
                .filter_map(|source| {
                    let (name, _) = backends
                        .iter()
                        .find(|(_, capabilities)| capabilities.model_hub == Some(source))?;
                    Some((source, (*name).to_owned()))
                })
                .collect(),
        )
    }

    fn sources(&self) -> Vec<ModelSource> {
        self.0.iter().map(|(source, _)| *source).collect()
    }

    /// The backend searching `source`.
    fn backend(&self, source: ModelSource) -> Option<&str> {
        self.0
            .iter()
            .find(|(s, _)| *s == source)
            .map(|(_, name)| name.as_str())
    }
}

/// Run every step at once, each on its hub, and gather the hits (each once) and the backends
/// that answered at least one call.
async fn search(
    run: &mut SearchRun<'_>,
    hubs: &Hubs,
    steps: &[FindStep],
    request: &FileRequest,
) -> (Vec<Hit>, HashSet<String>) {
    let options = SearchOptions {
        model_type: request.model_type,
        ..run.query.options.clone()
    };
    // Hubs hold public files with no dates: only who asks travels with the search (a date
    // range would make the executor skip them).
    let filters = Filters {
        access: run.query.filters.access.clone(),
        ..Filters::default()
    };
    let queries: Vec<[SearchQuery; 1]> = steps
        .iter()
        .map(|step| [SearchQuery::plain(step.query.clone())])
        .collect();
    let (executor, calls, filters) = (run.executor, &run.calls, &filters);
    let (deadline, cache) = (run.query.budget.call_deadline, run.cache_use());
    let outcomes = futures::future::join_all(steps.iter().zip(&queries).map(|(step, query)| {
        let options = &options;
        async move {
            let request = ExecRequest {
                cache,
                queries: query,
                filters,
                options,
                limit: FILES_PER_CALL,
                call_deadline: deadline,
                backend: hubs.backend(step.source),
            };
            executor.execute_on(&request, calls).await
        }
    }))
    .instrument(tracing::info_span!("exec", round = 1))
    .await;
    let mut seen = HashSet::new();
    let mut hits = Vec::new();
    let mut answered = HashSet::new();
    for (step, outcome) in steps.iter().zip(outcomes) {
        if outcome.failures.is_empty() && !outcome.budget_exhausted {
            answered.extend(hubs.backend(step.source).map(str::to_owned));
        }
        for hit in run.absorb(outcome, 1).hits {
            if seen.insert(hit.id.clone()) {
                hits.push(hit);
            }
        }
    }
    (hits, answered)
}

/// What to say when no candidate came back: which hubs were searched and found nothing, and
/// which did not answer, each with its first failure.
fn nothing_found(file_name: &str, hubs: &Hubs, failures: &[BackendFailure]) -> String {
    let failure_of = |backend: &str| failures.iter().find(|f| f.error.backend == backend);
    let searched: Vec<&str> = hubs
        .0
        .iter()
        .filter(|(_, backend)| failure_of(backend).is_none())
        .map(|(source, _)| source.display_name())
        .collect();
    let failed: Vec<String> = hubs
        .0
        .iter()
        .filter_map(|(source, backend)| {
            failure_of(backend).map(|f| {
                format!(
                    "{} did not answer ({})",
                    source.display_name(),
                    f.error.message
                )
            })
        })
        .collect();
    match (searched.is_empty(), failed.is_empty()) {
        (false, true) => format!(
            "No file like `{file_name}` was found on {}.",
            searched.join(" or ")
        ),
        (false, false) => format!(
            "No file like `{file_name}` was found on {}; {}.",
            searched.join(" or "),
            failed.join("; ")
        ),
        _ => format!(
            "No model hub answered, so `{file_name}` could not be looked for: {}.",
            failed.join("; ")
        ),
    }
}
