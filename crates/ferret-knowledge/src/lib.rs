//! The knowledge base's memory of itself. [`KnowledgeRegistry`] is one JSON file beside the index
//! (`knowledge_db.json`) recording, for each document ingested, its file name, the address it
//! came from, its title, summary and keywords, its content hash, when and into which index it
//! went. It is read from disk at every lookup (no copy in memory to go stale) and written
//! atomically. [`Documentalist`] adds a file or a web page: it fetches, ingests through a
//! [`KnowledgeIndex`], describes what changed (a [`Describer`]: extractive, or a model's with
//! the extractive one as fallback) and records it. Whether a document changed is the index's
//! word, from its own content hashes; the registry only follows it.
//!
//! This crate must not depend on a concrete backend, the executor or the agent: the index is a
//! trait the caller implements, so the registry works over any store.

mod describe;
mod documentalist;
mod llm;
mod registry;

pub use describe::{DescribedBy, Describer, Description, ExtractiveDescriber};
pub use documentalist::{
    Added, Change, Documentalist, DocumentalistError, Given, KnowledgeIndex, KnowledgeSource,
};
pub use llm::{DescriptionContext, DescriptionReply, LlmDescriber};
pub use registry::{content_hash, KnowledgeEntry, KnowledgeRegistry, RegistryError};
