//! `cargo xtask bench scale`: how the embedded index behaves as it grows. At each corpus size
//! (about 5k, 50k and 500k documents by default) it measures the ingest rate, the index's size
//! on disk, resident memory while ingesting and while searching, the time to open the index,
//! and query latency for BM25 and hybrid search on one thread and on every core.
//!
//! The corpora are made from SciFact's text: the corpus itself, then documents that join the
//! first half of one SciFact abstract to the second half of another, so every document is
//! distinct and the vocabulary is real. Their vectors come from the embedding cache: SciFact's
//! own vectors, and for a joined document the normalised sum of its halves' documents' vectors.
//! The embedder the index is given looks them up, so the curve measures the engine, not the
//! model. Ingest and search each run in a child process, so that each one's resident memory is
//! its own.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use ferret::backends::SearchRequest;
use ferret::index::LocalIndex;
use ferret::jobs::search::RetrievalMode;
use ferret::Filters;
use ferret_collection::{embedding_text, Document};
use ferret_core::{EmbedError, Embedder, RetryClass};
use ferret_embed::{CachedEmbedder, LocalEmbedder, LocalEmbedderConfig};
use serde::{Deserialize, Serialize};

use crate::judged::{ndcg_at, read_qrels, read_queries};
use crate::process::status_mb;

/// Each latency measurement runs queries for at least this long...
const MEASURE_FOR: Duration = Duration::from_secs(2);
/// ...and at least this many of them, so a 99th percentile means something.
const MIN_QUERIES: usize = 200;
/// Hits asked for per query: a page of results.
const LIMIT: usize = 10;
const EMBEDDER_NAME: &str = "scale-bench-table";

/// One corpus size's figures.
#[derive(Serialize, Deserialize)]
struct SizeRow {
    documents: usize,
    corpus_mb: f64,
    ingest: IngestRun,
    /// Reading the input alone, streamed as the ingest reads it and whole.
    read_streamed: ReadRun,
    read_whole: ReadRun,
    index_mb: f64,
    /// Of which the write-ahead log.
    wal_mb: f64,
    /// "exact scan", or "HNSW" when sealed segments hold a graph for the dense vectors.
    dense_search: String,
    search: SearchRun,
}

/// What the ingesting child measured.
#[derive(Serialize, Deserialize)]
struct IngestRun {
    seconds: f64,
    documents_per_second: f64,
    /// Peak resident memory of the ingesting process, counting the index's files it maps; the
    /// peak of its own memory alone (sampled every 20 ms); and both at the end.
    peak_resident_mb: f64,
    peak_anonymous_mb: f64,
    end_anonymous_mb: f64,
    end_file_mb: f64,
    /// Segments the index holds at the end: sealed ones and the growing one.
    segments: usize,
}

/// What a child that only reads the corpus measured.
#[derive(Serialize, Deserialize)]
struct ReadRun {
    seconds: f64,
    peak_resident_mb: f64,
    peak_anonymous_mb: f64,
}

/// What the searching child measured.
#[derive(Serialize, Deserialize)]
struct SearchRun {
    open_ms: f64,
    peak_resident_mb: f64,
    modes: Vec<ModeRun>,
}

#[derive(Serialize, Deserialize)]
struct ModeRun {
    mode: String,
    /// SciFact's judged test queries, the joined documents acting as distractors.
    ndcg_at_10: f64,
    one_thread: Latency,
    all_cores: Latency,
}

#[derive(Serialize, Deserialize)]
struct Latency {
    threads: usize,
    p50_ms: f64,
    p99_ms: f64,
    queries_per_second: f64,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    base_documents: usize,
    queries: usize,
    rows: Vec<SizeRow>,
    /// Sizes asked for and not run, with why.
    skipped: Vec<String>,
    build: String,
    command: String,
}

/// The parent: make each corpus, run the children, write the report.
pub fn run(dataset: &Path, base: &Path, sizes: &[usize], out: &Path) -> anyhow::Result<()> {
    let work = base.join("scale");
    std::fs::create_dir_all(&work)?;
    write_vectors(dataset, base, &work)?;
    let corpus = base_corpus(dataset)?;
    let queries = judged_queries(dataset)?;
    let mut rows: Vec<SizeRow> = Vec::new();
    let mut skipped = Vec::new();
    let mut sizes = sizes.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    for &size in &sizes {
        let corpus_file = work.join(format!("corpus-{size}.jsonl"));
        let index_dir = work.join(format!("index-{size}"));
        let clean_up = || {
            let _ = std::fs::remove_dir_all(&index_dir);
            let _ = std::fs::remove_file(index_dir.with_extension("lock"));
            let _ = std::fs::remove_file(&corpus_file);
        };
        clean_up();
        // What the largest size run so far took per document, with room to spare; a first
        // size is assumed to take 20 kB a document.
        let per_document = rows.last().map_or(20_000.0, |r: &SizeRow| {
            (r.index_mb + r.corpus_mb) * 1e6 / r.documents as f64
        });
        let needed = (per_document * size as f64 * 1.5) as u64;
        let free = free_bytes(&work)?;
        if needed > free {
            skipped.push(format!(
                "{size} documents: about {:.1} GB needed, {:.1} GB free",
                needed as f64 / 1e9,
                free as f64 / 1e9
            ));
            continue;
        }
        write_corpus(&corpus, size, &corpus_file)?;
        println!("{size} documents: reading");
        let read_streamed: ReadRun = child(dataset, &work, "read-streamed", size)?;
        let read_whole: ReadRun = child(dataset, &work, "read-whole", size)?;
        println!("{size} documents: ingesting");
        let ingest: IngestRun = child(dataset, &work, "ingest", size)?;
        println!("{}", serde_json::to_string(&ingest)?);
        let (index_mb, wal_mb, hnsw) = index_on_disk(&index_dir)?;
        println!("{size} documents: searching");
        let search: SearchRun = child(dataset, &work, "search", size)?;
        let row = SizeRow {
            documents: size,
            corpus_mb: std::fs::metadata(&corpus_file)?.len() as f64 / 1e6,
            ingest,
            read_streamed,
            read_whole,
            index_mb,
            wal_mb,
            dense_search: if hnsw { "HNSW" } else { "exact scan" }.into(),
            search,
        };
        println!("{}", serde_json::to_string(&row)?);
        rows.push(row);
        clean_up();
    }
    let report = Report {
        dataset: dataset.display().to_string(),
        base_documents: corpus.len(),
        queries: queries.len(),
        rows,
        skipped,
        build: crate::report::build_profile().into(),
        command: crate::report::command_line(),
    };
    std::fs::create_dir_all(out)?;
    if !report.rows.is_empty() {
        curve(&out.join("scale.svg"), &report.rows)?;
    }
    crate::report::write_report(&out.join("scale"), &report, &render(&report))
}

/// The children: `phase` is `ingest` or `search`, over the corpus of `size` in `work`; prints
/// its figures as one JSON line.
pub fn run_child(phase: &str, work: &Path, dataset: &Path, size: usize) -> anyhow::Result<()> {
    let index_dir = work.join(format!("index-{size}"));
    let corpus_file = work.join(format!("corpus-{size}.jsonl"));
    let figures = match phase {
        // Reading alone, as the ingest reads (streamed) and as it read before (whole).
        "read-streamed" | "read-whole" => {
            let started = Instant::now();
            let (documents, peak_anonymous_mb) = with_peak_anonymous(|| {
                if phase == "read-whole" {
                    ferret::index::read_path(&corpus_file, usize::MAX)
                        .map(|found| found.documents.len())
                } else {
                    ferret::index::stream_path(&corpus_file, usize::MAX)
                        .map(|stream| stream.count())
                }
            });
            anyhow::ensure!(
                documents? == size,
                "the corpus file does not hold {size} documents"
            );
            serde_json::to_string(&ReadRun {
                seconds: started.elapsed().as_secs_f64(),
                peak_resident_mb: status_mb("VmHWM"),
                peak_anonymous_mb,
            })?
        }
        "ingest" => {
            let table = Arc::new(VectorTable::load(dataset, work)?);
            let index =
                LocalIndex::open_or_create_with(&index_dir, Some(table as Arc<dyn Embedder>))?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let started = Instant::now();
            let (report, peak_anonymous_mb) = with_peak_anonymous(|| {
                runtime.block_on(index.ingest_path(
                    &corpus_file,
                    ferret::index::IngestOptions::default(),
                    &mut |_, _| {},
                ))
            });
            let report = report?;
            let seconds = started.elapsed().as_secs_f64();
            anyhow::ensure!(
                report.added == size && report.issues.is_empty(),
                "the ingest added {} of {size} documents ({} issues)",
                report.added,
                report.issues.len()
            );
            serde_json::to_string(&IngestRun {
                seconds,
                documents_per_second: size as f64 / seconds,
                peak_resident_mb: status_mb("VmHWM"),
                peak_anonymous_mb,
                end_anonymous_mb: status_mb("RssAnon"),
                end_file_mb: status_mb("RssFile"),
                segments: index.segment_count(),
            })?
        }
        "search" => {
            let table = Arc::new(VectorTable::load(dataset, work)?);
            let started = Instant::now();
            let embedder: Arc<dyn Embedder> = table.clone();
            let index = Arc::new(LocalIndex::open_with(&index_dir, Some(embedder))?);
            let open_ms = started.elapsed().as_secs_f64() * 1e3;
            let qrels = read_qrels(&dataset.join("qrels/test.tsv"))?;
            let mut modes = Vec::new();
            for mode in [RetrievalMode::Bm25, RetrievalMode::Hybrid] {
                modes.push(measure_mode(&index, &table, &qrels, mode)?);
            }
            serde_json::to_string(&SearchRun {
                open_ms,
                peak_resident_mb: status_mb("VmHWM"),
                modes,
            })?
        }
        other => bail!("unknown phase `{other}`"),
    };
    println!("{figures}");
    Ok(())
}

fn child<T: serde::de::DeserializeOwned>(
    dataset: &Path,
    work: &Path,
    phase: &str,
    size: usize,
) -> anyhow::Result<T> {
    // This very binary, even when a build has replaced the file since it started.
    let binary = if cfg!(target_os = "linux") {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe()?
    };
    crate::peers::peer_figures(
        Command::new(binary)
            .args(["bench", "--scale-child", phase, "--scale-size"])
            .arg(size.to_string())
            .arg("--dataset")
            .arg(dataset)
            .arg("--index")
            .arg(work.parent().context("the work folder has a parent")?),
        &format!("the {phase} of {size} documents"),
    )
}

/// One mode's quality and latency, searched straight on the index with the query's vector
/// given, so only the engine is timed.
fn measure_mode(
    index: &Arc<LocalIndex>,
    table: &VectorTable,
    qrels: &HashMap<String, HashMap<String, f64>>,
    mode: RetrievalMode,
) -> anyhow::Result<ModeRun> {
    let queries = &table.queries;
    let search = |n: usize| -> anyhow::Result<Vec<ferret::Hit>> {
        let (_, text, vector) = &queries[n % queries.len()];
        let request = SearchRequest {
            query: text.clone(),
            limit: LIMIT,
            filters: Filters::default(),
            options: Default::default(),
            text_for: None,
        };
        let vector = (mode == RetrievalMode::Hybrid).then_some(vector.as_slice());
        Ok(index.search_blocking(&request, mode, vector, "scale")?)
    };
    let mut ndcg = 0.0;
    for (n, (id, _, _)) in queries.iter().enumerate() {
        let hits = search(n)?;
        let ranked: Vec<&str> = hits.iter().map(|h| h.id.0.as_str()).collect();
        ndcg += ndcg_at(&ranked, &qrels[id], 10);
    }
    let timed = |first: usize| -> anyhow::Result<Vec<f64>> {
        let started = Instant::now();
        let mut latencies = Vec::new();
        let mut n = first;
        while latencies.len() < MIN_QUERIES || started.elapsed() < MEASURE_FOR {
            let one = Instant::now();
            search(n)?;
            latencies.push(one.elapsed().as_secs_f64() * 1e3);
            n += 1;
        }
        Ok(latencies)
    };
    let started = Instant::now();
    let one = timed(0)?;
    let one_thread = latency(one, 1, started.elapsed());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let started = Instant::now();
    let all: Vec<f64> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || timed(t * queries.len() / threads)))
            .collect();
        runs.into_iter()
            .map(|run| run.join().expect("a search thread panicked"))
            .collect::<anyhow::Result<Vec<_>>>()
    })?
    .concat();
    let all_cores = latency(all, threads, started.elapsed());
    Ok(ModeRun {
        mode: format!("{mode:?}").to_lowercase(),
        ndcg_at_10: ndcg / queries.len() as f64,
        one_thread,
        all_cores,
    })
}

fn latency(mut ms: Vec<f64>, threads: usize, wall: Duration) -> Latency {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    Latency {
        threads,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        queries_per_second: ms.len() as f64 / wall.as_secs_f64(),
    }
}

/// SciFact's documents, each with its text cut in two halves at the sentence nearest the
/// middle (blank lines folded so a joined document's halves can be told apart).
struct BaseDocument {
    document: Document,
    first_half: String,
    second_half: String,
}

fn base_corpus(dataset: &Path) -> anyhow::Result<Vec<BaseDocument>> {
    let found = ferret::index::read_path(&dataset.join("corpus.jsonl"), usize::MAX)?;
    anyhow::ensure!(
        !found.documents.is_empty(),
        "{} has no corpus",
        dataset.display()
    );
    Ok(found
        .documents
        .into_iter()
        .map(|document| {
            let text = document.text.replace("\n\n", "\n");
            let (first, second) = halves(&text);
            BaseDocument {
                first_half: first.trim().to_owned(),
                second_half: second.trim().to_owned(),
                document,
            }
        })
        .collect())
}

/// `text` cut after the sentence end nearest its middle, or else at the space nearest it.
fn halves(text: &str) -> (&str, &str) {
    let middle = text.len() / 2;
    let nearest = |ends: Vec<usize>| ends.into_iter().min_by_key(|&i| i.abs_diff(middle));
    let cut = nearest(text.match_indices(". ").map(|(i, _)| i + 1).collect())
        .or_else(|| nearest(text.match_indices(' ').map(|(i, _)| i).collect()))
        .unwrap_or(text.len());
    let (first, second) = text.split_at(cut);
    if second.trim().is_empty() {
        (first, first)
    } else {
        (first, second)
    }
}

/// Document `n` of every generated corpus: SciFact's own first, then joined ones.
fn document(corpus: &[BaseDocument], n: usize) -> Document {
    let count = corpus.len();
    if n < count {
        return corpus[n].document.clone();
    }
    let (first, second) = joined_pair(count, n);
    let base = &corpus[first].document;
    Document {
        id: format!("scale-{n}"),
        title: base.title.clone(),
        text: format!(
            "{}\n\n{}",
            corpus[first].first_half, corpus[second].second_half
        ),
        ..base.clone()
    }
}

/// The two documents joined document `n` takes its halves from: a different pair for every
/// `n` below `count` squared.
fn joined_pair(count: usize, n: usize) -> (usize, usize) {
    let first = n % count;
    let mut second = (first + (n / count) * 7919) % count;
    if second == first {
        second = (second + 1) % count;
    }
    (first, second)
}

fn write_corpus(corpus: &[BaseDocument], size: usize, path: &Path) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for n in 0..size {
        let doc = document(corpus, n);
        let record = serde_json::json!({"_id": doc.id, "title": doc.title, "text": doc.text});
        serde_json::to_writer(&mut out, &record)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

fn judged_queries(dataset: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let qrels = read_qrels(&dataset.join("qrels/test.tsv"))?;
    Ok(read_queries(&dataset.join("queries.test.jsonl"))?
        .into_iter()
        .filter(|(id, _)| qrels.contains_key(id))
        .collect())
}

/// The vectors of SciFact's documents, then of its judged queries, from the embedding cache
/// (the model runs only for texts it does not hold), as little-endian f32 in `work`.
fn write_vectors(dataset: &Path, base: &Path, work: &Path) -> anyhow::Result<()> {
    let model = LocalEmbedder::minilm(
        &ferret::models::default_models_dir(),
        LocalEmbedderConfig::default(),
    )
    .context(
        "the scale bench takes SciFact's vectors from all-MiniLM-L6-v2: run `cargo xtask models`",
    )?;
    let cached = CachedEmbedder::open(Arc::new(model), &base.join("embedding-cache"))?;
    let mut texts: Vec<String> = base_corpus(dataset)?
        .iter()
        .map(|b| embedding_text(&b.document))
        .collect();
    texts.extend(judged_queries(dataset)?.into_iter().map(|(_, text)| text));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut bytes = Vec::with_capacity(texts.len() * cached.dimension() * 4);
    for batch in texts.chunks(256) {
        for vector in runtime.block_on(cached.embed(batch))? {
            bytes.extend(vector.iter().flat_map(|x| x.to_le_bytes()));
        }
    }
    std::fs::write(work.join("vectors.f32"), bytes)?;
    std::fs::write(work.join("embedder.txt"), cached.name())?;
    Ok(())
}

/// The embedder the scale indexes are given: every text it is asked for is a SciFact document,
/// a joined document or a judged query, whose vector it finds or makes from the cached ones.
/// It holds SciFact's vectors and three maps from a text's hash, whatever the corpus size.
struct VectorTable {
    dimension: usize,
    vectors: Vec<Vec<f32>>,
    /// SciFact's documents and the judged queries, by the hash of their text.
    whole: HashMap<u64, usize>,
    first_halves: HashMap<u64, usize>,
    second_halves: HashMap<u64, usize>,
    /// (id, text, vector) of each judged query.
    queries: Vec<(String, String, Vec<f32>)>,
}

impl VectorTable {
    fn load(dataset: &Path, work: &Path) -> anyhow::Result<Self> {
        let corpus = base_corpus(dataset)?;
        let queries = judged_queries(dataset)?;
        let bytes = std::fs::read(work.join("vectors.f32"))?;
        let count = corpus.len() + queries.len();
        anyhow::ensure!(
            !bytes.is_empty() && bytes.len() % (4 * count) == 0,
            "vectors.f32 does not hold {count} vectors"
        );
        let dimension = bytes.len() / 4 / count;
        let vectors: Vec<Vec<f32>> = bytes
            .chunks_exact(4 * dimension)
            .map(|v| {
                v.chunks_exact(4)
                    .map(|x| f32::from_le_bytes([x[0], x[1], x[2], x[3]]))
                    .collect()
            })
            .collect();
        let mut table = Self {
            dimension,
            whole: HashMap::new(),
            first_halves: HashMap::new(),
            second_halves: HashMap::new(),
            queries: queries
                .into_iter()
                .zip(&vectors[corpus.len()..])
                .map(|((id, text), v)| (id, text, v.clone()))
                .collect(),
            vectors,
        };
        for (n, (_, text, _)) in table.queries.iter().enumerate() {
            table.whole.insert(hash(text), corpus.len() + n);
        }
        for (i, b) in corpus.iter().enumerate() {
            table.whole.insert(hash(&embedding_text(&b.document)), i);
            let first = format!("{} {}", b.document.title, b.first_half);
            table.first_halves.insert(hash(first.trim()), i);
            table.second_halves.insert(hash(&b.second_half), i);
        }
        Ok(table)
    }

    fn vector(&self, text: &str) -> Option<Vec<f32>> {
        if let Some(&i) = self.whole.get(&hash(text)) {
            return Some(self.vectors[i].clone());
        }
        let (first, second) = text.split_once("\n\n")?;
        let a = &self.vectors[*self.first_halves.get(&hash(first))?];
        let b = &self.vectors[*self.second_halves.get(&hash(second))?];
        let sum: Vec<f32> = a.iter().zip(b).map(|(x, y)| x + y).collect();
        let norm = sum
            .iter()
            .map(|x| x * x)
            .sum::<f32>()
            .sqrt()
            .max(f32::EPSILON);
        Some(sum.into_iter().map(|x| x / norm).collect())
    }
}

#[async_trait::async_trait]
impl Embedder for VectorTable {
    fn name(&self) -> &str {
        EMBEDDER_NAME
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts
            .iter()
            .map(|text| {
                self.vector(text).ok_or_else(|| EmbedError {
                    message: format!("not a text of the scale corpus: {:.60}", text),
                    retry: RetryClass::Permanent,
                })
            })
            .collect()
    }
}

fn hash(text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Run `f`, sampling this process's own resident memory (not counting mapped files) every
/// 20 ms: what `f` gives, and the peak in MB.
fn with_peak_anonymous<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut peak = status_mb("RssAnon");
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
                peak = peak.max(status_mb("RssAnon"));
            }
            peak
        });
        let value = f();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let peak = sampler.join().expect("the memory sampler panicked");
        (value, peak.max(status_mb("RssAnon")))
    })
}

/// The index's size on disk (blocks allocated), its write-ahead log's, and whether a segment
/// holds an HNSW graph for the dense vectors.
fn index_on_disk(dir: &Path) -> anyhow::Result<(f64, f64, bool)> {
    use std::os::unix::fs::MetadataExt as _;
    let (mut total, mut hnsw) = (0u64, false);
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry?;
        if !entry.file_type().is_file() {
            continue;
        }
        total += entry.metadata()?.blocks() * 512;
        let relative = entry.path().strip_prefix(dir)?.to_string_lossy();
        if relative.contains("vector_index-dense") && relative.contains("graph") {
            hnsw = true;
        }
    }
    let wal = LocalIndex::wal_bytes(dir);
    Ok((total as f64 / 1e6, wal as f64 / 1e6, hnsw))
}

/// Bytes free on the file system holding `dir`.
fn free_bytes(dir: &Path) -> anyhow::Result<u64> {
    let output = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .context("running df")?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .context("reading df's answer")
}

/// A line of the curve: its label, colour and (documents, milliseconds) points.
type Series = (String, plotters::style::RGBColor, Vec<(f64, f64)>);

fn curve(path: &Path, rows: &[SizeRow]) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (820, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let (small, large) = (
        rows[0].documents as f64,
        rows[rows.len() - 1].documents as f64,
    );
    let series: Vec<Series> = ["bm25", "hybrid"]
        .iter()
        .enumerate()
        .flat_map(|(m, mode)| {
            let [colour, light] = [
                [RGBColor(31, 119, 180), RGBColor(150, 190, 230)],
                [RGBColor(214, 39, 40), RGBColor(240, 150, 150)],
            ][m];
            let points = |p99: bool| -> Vec<(f64, f64)> {
                rows.iter()
                    .filter_map(|r| {
                        let run = r.search.modes.iter().find(|x| x.mode == *mode)?;
                        let l = &run.one_thread;
                        Some((r.documents as f64, if p99 { l.p99_ms } else { l.p50_ms }))
                    })
                    .collect()
            };
            [
                (format!("{mode} p50"), colour, points(false)),
                (format!("{mode} p99"), light, points(true)),
            ]
        })
        .collect();
    let top = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.1))
        .fold(0.01, f64::max)
        * 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Query latency (ms, one thread, log scales) by documents in the index",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(
            (small * 0.8..large * 1.25).log_scale(),
            (0.01..top).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("documents")
        .y_desc("ms per query")
        .draw()?;
    for (label, colour, points) in series {
        let style = ShapeStyle::from(colour).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points.clone(), style))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, style.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    root.present()?;
    Ok(())
}

fn render(r: &Report) -> String {
    let policy = ferret::index::SegmentPolicy::default();
    let mut md = format!(
        "# Scale: the embedded index from about 5k to 500k documents\n\n\
         Generated by `{}` ({}). The corpora are made from {}: its {} documents, then \
         documents joining the first half of one abstract to the second half of another. \
         Vectors come from the embedding cache (all-MiniLM-L6-v2; a joined document's is the \
         normalised sum of its halves' documents'), so the figures measure the engine, not the \
         model. Ingest and search each run in a process of their own; the page cache is warm \
         (the index was just written). Queries are SciFact's {} judged test queries, {} hits \
         each, searched on the index with the query's vector given; nDCG@10 is on SciFact's \
         judgements, the joined documents acting as distractors.\n\n\
         ![latency curve](scale.svg)\n\n\
         ## Ingest and size\n\n\
         Resident memory is split in two: the process's own (anonymous) memory, and the \
         index's files it maps, which the kernel can drop and read again. The ingest seals the \
         segment taking new documents once its vectors pass {} KB (an immutable segment, mapped \
         from disk, with an HNSW graph for the dense vectors; the growing segment is scanned \
         exactly) and merges the smallest sealed segments past {}, up to {} KB each.\n\n\
         | documents | input MB | ingest s | documents/s | peak own MB | peak with mapped files MB | at the end: own / mapped MB | index MB | of which WAL MB | segments | dense search |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
        r.command, r.build, r.dataset, r.base_documents, r.queries, LIMIT,
        policy.seal_at_kb, policy.segments, policy.max_segment_kb,
    );
    for row in &r.rows {
        md += &format!(
            "| {} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} / {:.0} | {:.0} | {:.0} | {} | {} |\n",
            row.documents,
            row.corpus_mb,
            row.ingest.seconds,
            row.ingest.documents_per_second,
            row.ingest.peak_anonymous_mb,
            row.ingest.peak_resident_mb,
            row.ingest.end_anonymous_mb,
            row.ingest.end_file_mb,
            row.index_mb,
            row.wal_mb,
            row.ingest.segments,
            row.dense_search,
        );
    }
    md += "\n## Reading the input\n\n\
           The ingest reads its input as a stream: a JSONL file one line at a time, in batches. \
           Here the corpus file is only read, by a process of its own, streamed as the ingest \
           reads it and whole (every document held, as ingest read before).\n\n\
           | documents | input MB | streamed: s / peak own MB | whole: s / peak own MB |\n\
           |---|---|---|---|\n";
    for row in &r.rows {
        md += &format!(
            "| {} | {:.0} | {:.1} / {:.0} | {:.1} / {:.0} |\n",
            row.documents,
            row.corpus_mb,
            row.read_streamed.seconds,
            row.read_streamed.peak_anonymous_mb,
            row.read_whole.seconds,
            row.read_whole.peak_anonymous_mb,
        );
    }
    md += "\n## Opening and searching\n\n\
           | documents | open ms | peak resident MB | mode | nDCG@10 | one thread p50 / p99 ms | q/s | every core p50 / p99 ms | q/s |\n\
           |---|---|---|---|---|---|---|---|---|\n";
    for row in &r.rows {
        for m in &row.search.modes {
            md += &format!(
                "| {} | {:.0} | {:.0} | {} | {:.4} | {:.2} / {:.2} | {:.0} | {:.2} / {:.2} ({} threads) | {:.0} |\n",
                row.documents,
                row.search.open_ms,
                row.search.peak_resident_mb,
                m.mode,
                m.ndcg_at_10,
                m.one_thread.p50_ms,
                m.one_thread.p99_ms,
                m.one_thread.queries_per_second,
                m.all_cores.p50_ms,
                m.all_cores.p99_ms,
                m.all_cores.threads,
                m.all_cores.queries_per_second,
            );
        }
    }
    for s in &r.skipped {
        md += &format!("\nNot run: {s}.\n");
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_cut_at_the_sentence_nearest_the_middle() {
        assert_eq!(
            halves("One two. Three four. Five six."),
            ("One two. Three four.", " Five six.")
        );
        assert_eq!(halves("no sentence end here"), ("no sentence", " end here"));
        assert_eq!(halves("word"), ("word", "word"));
    }

    #[test]
    fn joined_documents_take_distinct_pairs() {
        let count = 5183;
        let pairs: std::collections::HashSet<(usize, usize)> = (count..count * 100)
            .map(|n| joined_pair(count, n))
            .collect();
        assert_eq!(pairs.len(), count * 99);
        assert!(pairs.iter().all(|(a, b)| a != b));
    }
}
