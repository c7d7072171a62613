//! `ferret research syllabus.md`: sort the syllabus's references, add the lasting ones to the
//! knowledge base, run the research plan and print the note; `--replay RUN` writes a saved
//! run's note again without calling anything.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use ferret::{
    Budget, Documentalist, ExtractiveDescriber, LlmDescriber, LocalIndex, QdrantIndex,
    QdrantKnowledgeIndex, ResearchConfig, ResearchRecord, Researcher, StageModel, StageModelConfig,
    Strategy, Syllabus,
};

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
        match (&self.searcher.index, &qdrant) {
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
        let describer = self.searcher.llm.model()?.map(|model| {
            Arc::new(LlmDescriber::new(
                StageModel::new(model, StageModelConfig::default()),
                ExtractiveDescriber::default(),
            ))
        });
        let file = self.searcher.file_config()?;
        let fetch = file.fetch.fetch_config().map_err(anyhow::Error::msg)?;
        let fetched_dir = self
            .fetched_dir
            .clone()
            .unwrap_or_else(ferret::default_fetched_dir);
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
                    QdrantKnowledgeIndex::registry_of(&collection),
                    Arc::new(QdrantKnowledgeIndex::new(index, &collection, &url)),
                )
            }
            (None, None) => anyhow::bail!("the knowledge base could not be opened for writing"),
        };
        let mut documentalist =
            documentalist.with_fetcher(ferret::fetch::Fetcher::new(fetch)?, fetched_dir);
        if let Some(describer) = describer {
            documentalist = documentalist.with_describer(describer);
        }
        let budget = Budget {
            max_backend_calls: self.max_calls,
            ..Budget::default()
        };
        let researcher = ferret.researcher(documentalist, ResearchConfig::default(), &budget);

        let syllabus = Syllabus::read(text);
        let classification = researcher.classify(&syllabus).map_err(anyhow::Error::msg)?;
        eprintln!("{classification}");
        let outcome = researcher
            .research(&syllabus)
            .await
            .map_err(anyhow::Error::msg)?;
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

        let runs = self.runs_dir.unwrap_or_else(ferret::default_research_dir);
        let dir = runs.join(ferret::run_folder_name(&record.brief.title, started));
        record.save(&dir, text)?;
        let failed = record
            .run
            .steps
            .iter()
            .filter(|s| s.error.is_some())
            .count();
        eprintln!(
            "research: {} steps ({failed} not done), {} calls, {:.1}s; run saved in {}",
            record.run.steps.len(),
            record.calls,
            record.elapsed_ms as f64 / 1000.0,
            dir.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}
