//! `ferret research syllabus.md`: sort the syllabus's references, add the lasting ones to the
//! knowledge base, run the research plan and print the note; `--replay RUN` writes a saved
//! run's note again without calling anything.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use ferret::index::{LocalIndex, QdrantIndex};
use ferret::jobs::research::{ResearchConfig, ResearchRecord, Researcher, Syllabus};
use ferret::knowledge::{Documentalist, QdrantKnowledgeIndex};
use ferret::{Budget, Strategy};

use crate::searcher::SearcherArgs;
use crate::store_args::{self, EmbedderChoice};

/// Options of `ferret research`.
#[derive(Debug, clap::Args)]
pub struct ResearchArgs {
    /// The syllabus, in markdown.
    #[arg(required_unless_present = "replay")]
    syllabus: Option<PathBuf>,
    #[command(flatten)]
    searcher: SearcherArgs,
    /// Where fetched pages are kept (default: `fetched/` in Ferret's home).
    #[arg(long, value_name = "DIR")]
    fetched_dir: Option<PathBuf>,
    /// Where each run's folder is made (default: `research/` in Ferret's home).
    #[arg(long, value_name = "DIR")]
    runs_dir: Option<PathBuf>,
    /// Backend calls the whole run may make.
    #[arg(long, default_value_t = 60)]
    max_calls: u32,
    /// Seconds the whole run may search for.
    #[arg(long = "wall-time", value_name = "SECONDS", default_value_t = 600)]
    wall_time_secs: u64,
    /// Print the note of a saved run (its folder or its record.json) again, calling no backend
    /// and no model.
    #[arg(long, value_name = "RUN", conflicts_with = "syllabus")]
    replay: Option<PathBuf>,
}

impl ResearchArgs {
    /// Run the research, or replay one.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        if let Some(run) = &self.replay {
            let record = ResearchRecord::load(run)?;
            print!("{}", runtime.block_on(Researcher::replay(&record)));
            return Ok(ExitCode::SUCCESS);
        }
        let Some(path) = self.syllabus.clone() else {
            anyhow::bail!("give a syllabus, or --replay RUN");
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the syllabus {}", path.display()))?;
        runtime.block_on(self.research(&text))
    }

    async fn research(self, text: &str) -> anyhow::Result<ExitCode> {
        let started = chrono::Utc::now();
        let qdrant = self.searcher.store.qdrant();
        let file = self.searcher.file_config()?;
        // The index the search would use: the flag, else the configuration file's.
        let index = self.searcher.index.clone().or_else(|| {
            qdrant
                .is_none()
                .then(|| file.local.as_ref().map(|l| l.index.clone()))
                .flatten()
        });
        match (&index, &qdrant) {
            (Some(dir), None) if !dir.exists() => {
                // A new knowledge base: the references fill it.
                let embedder = store_args::ingest_embedder(EmbedderChoice::Auto, Some(dir))?;
                LocalIndex::open_or_create_with(dir, embedder)
                    .with_context(|| format!("creating the index at {}", dir.display()))?;
            }
            (None, None) => anyhow::bail!(
                "research needs a knowledge base to add references to: --index DIR (made when missing) or --qdrant-url"
            ),
            _ => {}
        }
        let fetch = file.fetch.fetch_config().map_err(anyhow::Error::msg)?;
        let fetched_dir = self
            .fetched_dir
            .clone()
            .unwrap_or_else(ferret::index::default_fetched_dir);
        let ferret = self.searcher.build(Strategy::Plan)?;
        let documentalist = match (ferret.documentalist(), qdrant) {
            (Some(documentalist), _) => documentalist,
            (None, Some(config)) => {
                let (collection, url) = (config.collection.clone(), config.url.clone());
                let embedder = store_args::ingest_embedder(EmbedderChoice::Auto, None)?;
                let index = QdrantIndex::connect_or_create(config, embedder)
                    .await
                    .with_context(|| format!("opening collection `{collection}` at {url}"))?;
                Documentalist::new(
                    QdrantKnowledgeIndex::registry_of(&collection, &url),
                    Arc::new(QdrantKnowledgeIndex::new(index, &collection, &url)),
                )
                .with_describer(ferret.describer())
            }
            (None, None) => anyhow::bail!("the knowledge base could not be opened for writing"),
        };
        let documentalist =
            documentalist.with_fetcher(ferret::fetch::Fetcher::new(fetch)?, fetched_dir);
        // A run reads many pages and searches each theme: its own wall time, not a question's.
        let budget = Budget {
            max_backend_calls: self.max_calls,
            wall_time: std::time::Duration::from_secs(self.wall_time_secs),
            ..Budget::default()
        };
        let researcher = ferret.researcher(documentalist, ResearchConfig::default(), &budget);

        let syllabus = Syllabus::read(text);
        let classification = researcher.classify(&syllabus)?;
        eprintln!("{classification}");
        let outcome = researcher.research(&syllabus).await?;
        let record = &outcome.record;
        // In plan order: steps are recorded as their waves end.
        let mut steps: Vec<_> = record.run.steps.iter().collect();
        steps.sort_by_key(|s| s.variable[1..].parse::<usize>().unwrap_or(usize::MAX));
        for step in steps {
            if let Some(error) = &step.error {
                eprintln!("#{} {}: {error}", step.variable, step.tool);
            }
        }
        print!("{}", record.report);

        let runs = self
            .runs_dir
            .unwrap_or_else(ferret::knowledge::default_research_dir);
        let dir = new_folder(
            &runs,
            &ferret::jobs::research::run_folder_name(&record.brief.title, started),
        )?;
        record.save(&dir, text)?;
        let failed = record
            .run
            .steps
            .iter()
            .filter(|s| s.error.is_some())
            .count();
        let rounds = record.earlier.len() + 1;
        eprintln!(
            "research: {} steps in the last of {rounds} rounds ({failed} not done), {} searches and {} model calls in all, {:.1}s; run saved in {}",
            record.run.steps.len(),
            record.calls,
            record.model_calls,
            record.elapsed_ms as f64 / 1000.0,
            dir.display()
        );
        // A note with nothing found is still printed and saved, but the run did not succeed.
        Ok(if outcome.report.is_some() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}

/// A new folder `name` under `runs`, `name-2`, `name-3`… when it is taken: a run never
/// writes over another.
fn new_folder(runs: &Path, name: &str) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(runs).with_context(|| format!("making {}", runs.display()))?;
    let mut n = 1;
    loop {
        let dir = match n {
            1 => runs.join(name),
            n => runs.join(format!("{name}-{n}")),
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(e).with_context(|| format!("making {}", dir.display())),
        }
    }
}
