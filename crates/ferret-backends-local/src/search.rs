//! Reading the index: searches by mode, the most recent entries, documents by id, and which
//! of them an asker may read.

use std::collections::{HashMap, HashSet};
use std::sync::RwLockReadGuard;

use ferret_collection::{
    date_days, point_id, rank_hits, to_hit, ACL_FIELD, DATE_FIELD, DENSE_VECTOR, PREFETCH_LIMIT,
    RRF_K, SPARSE_VECTOR, TIE_MARGIN,
};
use ferret_core::{Access, Filters, Hit, RetrievalMode, SearchRequest, Unlisted};
use qdrant_edge::external::ordered_float::OrderedFloat;
use qdrant_edge::{
    Condition, Direction, EdgeShard, FieldCondition, Filter, Fusion, NamedQuery, OrderBy,
    OrderByInterface, PointId, Prefetch, QueryEnum, QueryRequest, Range, ScoringQuery,
    ScrollRequest, VectorInternal, WithPayloadInterface, WithVector,
};

use crate::error::IndexError;
use crate::index::{each_doc_id, field, LocalIndex};

impl LocalIndex {
    /// The stored document `id` as a hit of `backend_name`, when `access` (if any) lets the
    /// asker read it: for reading a document whole by the id a search returned. The engine
    /// applies the same filter as a search, so a document the asker may not read is not found,
    /// as one that does not exist.
    pub fn document(
        &self,
        id: &str,
        access: Option<&Access>,
        backend_name: &str,
    ) -> Result<Option<Hit>, IndexError> {
        if access.is_some_and(Access::admits_nothing) {
            return Ok(None);
        }
        let filter = ids_readable_by(std::iter::once(id), access);
        let (records, _) = self
            .shard()
            .scroll(ScrollRequest {
                offset: None,
                limit: Some(1),
                filter: Some(filter),
                with_payload: Some(WithPayloadInterface::Bool(true)),
                with_vector: WithVector::Bool(false),
                order_by: None,
            })
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        Ok(records
            .into_iter()
            .next()
            .and_then(|r| r.payload)
            .and_then(|payload| to_hit(1.0, payload.0, backend_name))
            .filter(|hit| hit.id.0 == id))
    }

    /// Of `ids`, those the index holds and `access` lets the asker read, by the lists stored
    /// now: the same filter a search applies, asked of the stored documents by id.
    pub fn readable(&self, ids: &[String], access: &Access) -> Result<HashSet<String>, IndexError> {
        if access.admits_nothing() || ids.is_empty() {
            return Ok(HashSet::new());
        }
        let filter = ids_readable_by(ids.iter().map(String::as_str), Some(access));
        let asked: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut found = HashSet::new();
        each_doc_id(&self.shard(), Some(filter), |_, doc_id| {
            // A point id is a hash of the document id: the stored id must be the one asked.
            if let Some(id) = doc_id.filter(|id| asked.contains(id)) {
                found.insert(id.to_owned());
            }
        })?;
        Ok(found)
    }

    /// Run one search, blocking the calling thread. Dense and hybrid search take the query's
    /// embedding from [`embed_query`](Self::embed_query).
    pub fn search_blocking(
        &self,
        request: &SearchRequest,
        mode: RetrievalMode,
        query_vector: Option<&[f32]>,
        backend_name: &str,
    ) -> Result<Vec<Hit>, IndexError> {
        if request
            .filters
            .access
            .as_ref()
            .is_some_and(Access::admits_nothing)
        {
            return Ok(Vec::new());
        }
        let filter = engine_filter(&request.filters);
        if let Some(n) = request.filters.most_recent {
            return self.most_recent(n.min(request.limit), filter, backend_name);
        }
        let sparse = || {
            let vector = self.query_encoder.embed_query(&request.query);
            (!vector.indices.is_empty())
                .then(|| NamedQuery::new(VectorInternal::Sparse(vector), SPARSE_VECTOR))
        };
        let dense = || -> Result<NamedQuery<VectorInternal>, IndexError> {
            self.supports(mode)?;
            let vector = query_vector.ok_or_else(|| {
                IndexError::Engine(format!("{mode} search was given no query vector"))
            })?;
            Ok(NamedQuery::new(
                VectorInternal::Dense(vector.to_vec()),
                DENSE_VECTOR,
            ))
        };
        let nearest = |q: NamedQuery<VectorInternal>| ScoringQuery::Vector(QueryEnum::Nearest(q));
        // Extra candidates so that ties at the cut are broken by us, not by the engine.
        let limit = request.limit + TIE_MARGIN;
        let (prefetches, query) = match mode {
            RetrievalMode::Bm25 => match sparse() {
                Some(q) => (Vec::new(), nearest(q)),
                None => return Ok(Vec::new()),
            },
            RetrievalMode::Dense => (Vec::new(), nearest(dense()?)),
            RetrievalMode::Hybrid => {
                let prefetch = |q| Prefetch {
                    prefetches: Vec::new(),
                    query: Some(nearest(q)),
                    limit: PREFETCH_LIMIT.max(limit),
                    params: None,
                    filter: filter.clone(),
                    score_threshold: None,
                };
                let mut prefetches = vec![prefetch(dense()?)];
                prefetches.extend(sparse().map(prefetch));
                (
                    prefetches,
                    ScoringQuery::Fusion(Fusion::Rrf {
                        k: RRF_K,
                        weights: None,
                    }),
                )
            }
        };
        // Fewer hits read than returned: the ranking needs only ids and scores, and the text of
        // the first few is read afterwards.
        let text_for = request.text_for.filter(|&n| n < request.limit);
        let shard = self.shard();
        let points = shard
            .query(QueryRequest {
                prefetches,
                query: Some(query),
                filter,
                score_threshold: None,
                limit,
                offset: 0,
                params: None,
                with_vector: WithVector::Bool(false),
                with_payload: WithPayloadInterface::Bool(text_for.is_none()),
            })
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        if let Some(read) = text_for {
            return self.ranked_by_id(&shard, points, request.limit, read, backend_name);
        }
        let hits = points
            .into_iter()
            .filter_map(|p| {
                to_hit(
                    p.score,
                    p.payload.map(|p| p.0).unwrap_or_default(),
                    backend_name,
                )
            })
            .collect();
        Ok(rank_hits(hits, request.limit))
    }

    /// `points` ranked as [`rank_hits`] ranks hits and cut to `limit`, the first `read` with their
    /// text and payload, the others with their id and score only.
    pub(crate) fn ranked_by_id(
        &self,
        shard: &RwLockReadGuard<'_, EdgeShard>,
        points: Vec<qdrant_edge::ScoredPoint>,
        limit: usize,
        read: usize,
        backend_name: &str,
    ) -> Result<Vec<Hit>, IndexError> {
        let ids = self.doc_ids(shard)?;
        let mut ranked: Vec<(f32, &String, u64)> = points
            .iter()
            .filter_map(|p| match p.id {
                PointId::NumId(point) => ids.get(&point).map(|doc| (p.score, doc, point)),
                PointId::Uuid(_) => None,
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        ranked.truncate(limit);
        let wanted: Vec<PointId> = ranked
            .iter()
            .take(read)
            .map(|&(_, _, point)| PointId::NumId(point))
            .collect();
        let mut whole: HashMap<u64, serde_json::Map<String, serde_json::Value>> = shard
            .retrieve(&wanted, Some(WithPayloadInterface::Bool(true)), None)
            .map_err(|e| IndexError::Engine(e.to_string()))?
            .into_iter()
            .filter_map(|r| match (r.id, r.payload) {
                (PointId::NumId(point), Some(payload)) => Some((point, payload.0)),
                _ => None,
            })
            .collect();
        Ok(ranked
            .into_iter()
            .map(|(score, doc, point)| {
                whole
                    .remove(&point)
                    .and_then(|payload| to_hit(score, payload, backend_name))
                    .unwrap_or_else(|| Hit::new(doc.clone(), "", "", score, backend_name))
            })
            .collect())
    }

    /// The newest `n` dated documents, newest first, scored from 1 down.
    pub(crate) fn most_recent(
        &self,
        n: usize,
        filter: Option<Filter>,
        backend_name: &str,
    ) -> Result<Vec<Hit>, IndexError> {
        let order = OrderBy {
            key: field(DATE_FIELD),
            direction: Some(Direction::Desc),
            start_from: None,
        };
        let has_date = Filter::new_must(Condition::Field(FieldCondition::new_range(
            field(DATE_FIELD),
            Range {
                lt: None,
                gt: None,
                gte: Some(OrderedFloat(f64::MIN)),
                lte: None,
            },
        )));
        let filter = Some(match filter {
            Some(f) => f.merge_owned(has_date),
            None => has_date,
        });
        let (records, _) = self
            .shard()
            .scroll(ScrollRequest {
                offset: None,
                limit: Some(n),
                filter,
                with_payload: Some(WithPayloadInterface::Bool(true)),
                with_vector: WithVector::Bool(false),
                order_by: Some(OrderByInterface::Struct(order)),
            })
            .map_err(|e| IndexError::Engine(e.to_string()))?;
        let count = records.len().max(1) as f32;
        Ok(records
            .into_iter()
            .enumerate()
            .filter_map(|(rank, r)| {
                to_hit(
                    1.0 - rank as f32 / count,
                    r.payload.map(|p| p.0).unwrap_or_default(),
                    backend_name,
                )
            })
            .collect())
    }
}

/// The engine's filter for the documents of `ids` that `access` lets the asker read (all of
/// them without an access): the same access filter a search applies.
fn ids_readable_by<'i>(ids: impl Iterator<Item = &'i str>, access: Option<&Access>) -> Filter {
    let points = ids.map(|id| PointId::NumId(point_id(id))).collect();
    let readable = engine_filter(&Filters {
        access: access.cloned(),
        ..Filters::default()
    });
    Filter {
        should: None,
        min_should: None,
        must: Some(
            std::iter::once(Condition::HasId(points))
                .chain(readable.map(Condition::Filter))
                .collect(),
        ),
        must_not: None,
    }
}

/// The engine's filter for `filters`: the date range, and the documents the asker may read.
pub(crate) fn engine_filter(filters: &Filters) -> Option<Filter> {
    let mut must = Vec::new();
    if let Some(range) = filters.date_range {
        must.push(Condition::Field(FieldCondition::new_range(
            field(DATE_FIELD),
            Range {
                lt: None,
                gt: None,
                gte: range.from.map(|d| OrderedFloat(date_days(d))),
                lte: range.to.map(|d| OrderedFloat(date_days(d))),
            },
        )));
    }
    if let Some(access) = &filters.access {
        // One of the asker's groups in the document's list, or (when unlisted documents are
        // public) no list at all.
        let mut readable: Vec<Condition> = access
            .groups
            .iter()
            .map(|group| {
                Condition::Field(FieldCondition::new_match(
                    field(ACL_FIELD),
                    group.clone().into(),
                ))
            })
            .collect();
        if access.unlisted == Unlisted::Public {
            readable.push(Condition::Field(FieldCondition::new_is_empty(
                field(ACL_FIELD),
                true,
            )));
        }
        must.push(Condition::Filter(Filter {
            should: Some(readable),
            min_should: None,
            must: None,
            must_not: None,
        }));
    }
    (!must.is_empty()).then(|| Filter {
        should: None,
        min_should: None,
        must: Some(must),
        must_not: None,
    })
}
