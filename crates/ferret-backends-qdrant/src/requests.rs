//! Every request sent to the server and every mapping of its answers, as pure functions, so that
//! they are tested without a server.

use std::collections::{HashMap, HashSet};

use ferret_collection::{
    date_days, payload, point_id, rank_hits, to_hit, Bm25Params, DenseMeta, Document, ACL_FIELD,
    DATE_FIELD, DENSE_VECTOR, PREFETCH_LIMIT, SOURCE_FIELD, SPARSE_VECTOR, TIE_MARGIN,
};
use ferret_core::{Access, Filters, Hit, RetrievalMode, SearchRequest, Unlisted};
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::points_selector::PointsSelectorOneOf;
use qdrant_client::qdrant::r#match::MatchValue;
use qdrant_client::qdrant::value::Kind;
use qdrant_client::qdrant::{
    vectors_config, with_payload_selector, with_vectors_selector, CollectionInfo, Condition,
    CountPoints, CreateCollection, CreateFieldIndexCollection, DeletePoints, Direction, Distance,
    FieldType, Filter, Fusion, GetPoints, ListValue, Modifier, NamedVectors, NullValue, OrderBy,
    PayloadIncludeSelector, PayloadSchemaType, PointId, PointStruct, PointsIdsList, PointsSelector,
    PrefetchQuery, Query, QueryPoints, Range, RetrievedPoint, ScoredPoint, ScrollPoints,
    SparseVector, SparseVectorConfig, SparseVectorParams, Struct, UpdateCollection, UpsertPoints,
    Value, Vector, VectorInput, VectorParams, VectorParamsMap, Vectors, VectorsConfig,
    WithPayloadSelector, WithVectorsSelector,
};
use qdrant_edge::bm25_embed::EdgeBm25;
use serde::{Deserialize, Serialize};

use crate::QdrantError;

/// The key of the collection metadata that holds [`CollectionMeta`].
pub(crate) const META_KEY: &str = "ferret";
/// Bumped when a collection written by an older Ferret can no longer be read as it is.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Points per page when scrolling a source's chunks.
const SCROLL_PAGE: u32 = 1_000;

/// The indexed payload fields: their index type, and the schema type the server reports for it.
pub(crate) const PAYLOAD_INDEXES: [(&str, FieldType, PayloadSchemaType); 3] = [
    (DATE_FIELD, FieldType::Float, PayloadSchemaType::Float),
    (SOURCE_FIELD, FieldType::Keyword, PayloadSchemaType::Keyword),
    (ACL_FIELD, FieldType::Keyword, PayloadSchemaType::Keyword),
];

/// What stays fixed for the life of a collection, kept in its metadata: the BM25 parameters its
/// document vectors were computed with and, when it has dense vectors, the embedder that made them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CollectionMeta {
    pub(crate) format: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) avg_doc_len: Option<f64>,
    pub(crate) k1: f64,
    pub(crate) b: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dense: Option<DenseMeta>,
}

impl CollectionMeta {
    /// A new collection's: default BM25 parameters, `avg_doc_len` still to be measured.
    pub(crate) fn new(dense: Option<DenseMeta>) -> Self {
        let defaults = Bm25Params::default();
        Self {
            format: FORMAT_VERSION,
            avg_doc_len: None,
            k1: defaults.k1,
            b: defaults.b,
            dense,
        }
    }

    pub(crate) fn bm25(&self) -> Bm25Params {
        Bm25Params {
            k1: self.k1,
            b: self.b,
            avg_doc_len: self.avg_doc_len,
        }
    }
}

/// The collection metadata holding `meta`.
pub(crate) fn metadata(meta: &CollectionMeta) -> HashMap<String, Value> {
    let json = serde_json::to_value(meta).unwrap_or(serde_json::Value::Null);
    HashMap::from([(META_KEY.to_owned(), to_value(json))])
}

/// The request creating a collection for `meta`: a sparse BM25 vector weighted by the server's
/// IDF, and a named cosine dense vector only when there is an embedder.
pub(crate) fn collection_request(collection: &str, meta: &CollectionMeta) -> CreateCollection {
    let dense = meta.dense.as_ref().map(|dense| VectorsConfig {
        config: Some(vectors_config::Config::ParamsMap(VectorParamsMap {
            map: HashMap::from([(
                DENSE_VECTOR.to_owned(),
                VectorParams {
                    size: dense.dimension as u64,
                    distance: Distance::Cosine.into(),
                    ..Default::default()
                },
            )]),
        })),
    });
    let sparse = SparseVectorParams {
        index: None,
        modifier: Some(Modifier::Idf.into()),
    };
    CreateCollection {
        collection_name: collection.to_owned(),
        vectors_config: dense,
        sparse_vectors_config: Some(SparseVectorConfig {
            map: HashMap::from([(SPARSE_VECTOR.to_owned(), sparse)]),
        }),
        metadata: metadata(meta),
        ..Default::default()
    }
}

/// The request replacing the collection's Ferret metadata with `meta` (other keys are kept).
pub(crate) fn metadata_update(collection: &str, meta: &CollectionMeta) -> UpdateCollection {
    UpdateCollection {
        collection_name: collection.to_owned(),
        metadata: metadata(meta),
        ..Default::default()
    }
}

/// The request indexing payload `field` as `field_type`, answered once the index is built.
pub(crate) fn field_index_request(
    collection: &str,
    field: &str,
    field_type: FieldType,
) -> CreateFieldIndexCollection {
    CreateFieldIndexCollection {
        collection_name: collection.to_owned(),
        wait: Some(true),
        field_name: field.to_owned(),
        field_type: Some(field_type.into()),
        ..Default::default()
    }
}

/// The payload indexes `info` lacks; an index of the wrong type is a schema error.
pub(crate) fn missing_indexes(
    collection: &str,
    info: &CollectionInfo,
) -> Result<Vec<(&'static str, FieldType)>, QdrantError> {
    let mut missing = Vec::new();
    for (field, field_type, schema) in PAYLOAD_INDEXES {
        match info.payload_schema.get(field) {
            None => missing.push((field, field_type)),
            Some(found) if found.data_type == i32::from(schema) => {}
            Some(found) => {
                let found = PayloadSchemaType::try_from(found.data_type)
                    .map_or("unknown", |t| t.as_str_name());
                return Err(incompatible(
                    collection,
                    format!(
                        "the payload field `{field}` is indexed as {found}, Ferret needs {}",
                        schema.as_str_name()
                    ),
                ));
            }
        }
    }
    Ok(missing)
}

fn incompatible(collection: &str, reason: impl Into<String>) -> QdrantError {
    QdrantError::IncompatibleSchema {
        collection: collection.to_owned(),
        reason: reason.into(),
    }
}

/// The Ferret metadata of a collection, once its vectors are checked to be what it says.
pub(crate) fn meta_from_info(
    collection: &str,
    info: &CollectionInfo,
) -> Result<CollectionMeta, QdrantError> {
    let config = info.config.as_ref();
    let params = config
        .and_then(|c| c.params.as_ref())
        .ok_or_else(|| incompatible(collection, "the server reported no collection parameters"))?;
    let sparse = params
        .sparse_vectors_config
        .as_ref()
        .and_then(|s| s.map.get(SPARSE_VECTOR));
    match sparse {
        None => {
            return Err(incompatible(
                collection,
                format!("it has no sparse vector `{SPARSE_VECTOR}`: it was not made by Ferret"),
            ))
        }
        Some(s) if s.modifier != Some(Modifier::Idf.into()) => {
            return Err(incompatible(
                collection,
                format!("its sparse vector `{SPARSE_VECTOR}` is not weighted by IDF"),
            ));
        }
        Some(_) => {}
    }
    let raw = config.and_then(|c| c.metadata.get(META_KEY)).cloned().ok_or_else(|| {
        incompatible(
            collection,
            format!("it has no `{META_KEY}` metadata: it was not made by Ferret, or the server is older than Qdrant 1.16 and dropped it"),
        )
    })?;
    let json = to_json(raw);
    let format = json.get("format").and_then(serde_json::Value::as_u64);
    if format != Some(u64::from(FORMAT_VERSION)) {
        let found = format.map_or_else(|| "no format".to_owned(), |f| format!("format {f}"));
        return Err(incompatible(
            collection,
            format!("it has {found}, this Ferret reads format {FORMAT_VERSION}: ingest into a new collection"),
        ));
    }
    let meta: CollectionMeta = serde_json::from_value(json).map_err(|e| {
        incompatible(
            collection,
            format!("its `{META_KEY}` metadata is unreadable: {e}"),
        )
    })?;
    if let Some(dense) = &meta.dense {
        let vector = match params
            .vectors_config
            .as_ref()
            .and_then(|v| v.config.as_ref())
        {
            Some(vectors_config::Config::ParamsMap(map)) => map.map.get(DENSE_VECTOR),
            _ => None,
        };
        match vector {
            Some(v)
                if v.size == dense.dimension as u64
                    && v.distance == i32::from(Distance::Cosine) => {}
            _ => {
                return Err(incompatible(
                    collection,
                    format!(
                        "its metadata names {}-dimensional vectors from `{}`, but it has no such cosine vector `{DENSE_VECTOR}`",
                        dense.dimension, dense.embedder
                    ),
                ));
            }
        }
    }
    Ok(meta)
}

fn payload_selector(fields: &[&str]) -> WithPayloadSelector {
    let fields = fields.iter().map(|f| (*f).to_owned()).collect();
    WithPayloadSelector {
        selector_options: Some(with_payload_selector::SelectorOptions::Include(
            PayloadIncludeSelector { fields },
        )),
    }
}

fn whole_payload() -> WithPayloadSelector {
    WithPayloadSelector {
        selector_options: Some(with_payload_selector::SelectorOptions::Enable(true)),
    }
}

fn no_vectors() -> WithVectorsSelector {
    WithVectorsSelector {
        selector_options: Some(with_vectors_selector::SelectorOptions::Enable(false)),
    }
}

/// The request reading the stored content hash of each of `ids`.
pub(crate) fn stored_hashes_request(collection: &str, ids: &[u64]) -> GetPoints {
    GetPoints {
        collection_name: collection.to_owned(),
        ids: ids.iter().map(|&id| PointId::from(id)).collect(),
        with_payload: Some(payload_selector(&["hash"])),
        with_vectors: Some(no_vectors()),
        ..Default::default()
    }
}

/// Point id → stored hash, from the answer to [`stored_hashes_request`]; points without a
/// numeric id or a hash are left out, so they count as new and are overwritten.
pub(crate) fn stored_hashes(points: Vec<RetrievedPoint>) -> HashMap<u64, String> {
    points
        .into_iter()
        .filter_map(|p| {
            let id = num_id(p.id.as_ref())?;
            match p.payload.get("hash")?.kind.as_ref()? {
                Kind::StringValue(hash) => Some((id, hash.clone())),
                _ => None,
            }
        })
        .collect()
}

fn num_id(id: Option<&PointId>) -> Option<u64> {
    match id?.point_id_options.as_ref()? {
        PointIdOptions::Num(n) => Some(*n),
        PointIdOptions::Uuid(_) => None,
    }
}

/// A document as a point: its BM25 vector (title and text, as BEIR's BM25 baselines index
/// both), its dense vector when there is one, and the shared payload.
pub(crate) fn point(
    doc: &Document,
    id: u64,
    hash: &str,
    encoder: &EdgeBm25,
    dense: Option<Vec<f32>>,
) -> PointStruct {
    let sparse = encoder.embed_document(&format!("{}\n{}", doc.title, doc.text));
    let mut vectors = HashMap::from([(
        SPARSE_VECTOR.to_owned(),
        Vector::new_sparse(sparse.indices, sparse.values),
    )]);
    if let Some(dense) = dense {
        vectors.insert(DENSE_VECTOR.to_owned(), Vector::new_dense(dense));
    }
    PointStruct {
        id: Some(PointId::from(id)),
        payload: payload(doc, hash)
            .into_iter()
            .map(|(k, v)| (k, to_value(v)))
            .collect(),
        vectors: Some(Vectors::from(NamedVectors { vectors })),
    }
}

/// The request writing `points`, answered once they are applied.
pub(crate) fn upsert_request(collection: &str, points: Vec<PointStruct>) -> UpsertPoints {
    UpsertPoints {
        collection_name: collection.to_owned(),
        wait: Some(true),
        points,
        ..Default::default()
    }
}

/// One page of the points whose source is `source` (those `writer` may read, when there is
/// one), with their document ids; `None` when the writer may read nothing.
pub(crate) fn source_page_request(
    collection: &str,
    source: &str,
    writer: Option<&Access>,
    offset: Option<PointId>,
) -> Option<ScrollPoints> {
    let readable = filter_conditions(&Filters {
        access: writer.cloned(),
        ..Filters::default()
    })?;
    // An explicit keyword match: qdrant-client turns a string with spaces into a full-text match.
    let of_source = Condition::matches(SOURCE_FIELD, MatchValue::Keyword(source.to_owned()));
    Some(ScrollPoints {
        collection_name: collection.to_owned(),
        filter: Some(Filter::must(readable.into_iter().chain([of_source]))),
        offset,
        limit: Some(SCROLL_PAGE),
        with_payload: Some(payload_selector(&["doc_id"])),
        with_vectors: Some(no_vectors()),
        ..Default::default()
    })
}

/// The ids of the points on a page of [`source_page_request`] whose document is not in `kept`.
pub(crate) fn stale_points(points: Vec<RetrievedPoint>, kept: &HashSet<String>) -> Vec<PointId> {
    points
        .into_iter()
        .filter_map(|p| {
            let doc_id = match p.payload.get("doc_id").and_then(|v| v.kind.as_ref()) {
                Some(Kind::StringValue(id)) => Some(id.as_str()),
                _ => None,
            };
            if doc_id.is_some_and(|id| kept.contains(id)) {
                return None;
            }
            p.id
        })
        .collect()
}

/// The request reading which of `ids` the asker `access` describes may read now, by the lists
/// the collection holds; `None` when no point can pass.
pub(crate) fn readable_request(
    collection: &str,
    ids: &[String],
    access: &Access,
) -> Option<ScrollPoints> {
    let filters = Filters {
        access: Some(access.clone()),
        ..Filters::default()
    };
    let points: Vec<PointId> = ids.iter().map(|id| PointId::from(point_id(id))).collect();
    let conditions = filter_conditions(&filters)?
        .into_iter()
        .chain([Condition::has_id(points)]);
    Some(ScrollPoints {
        collection_name: collection.to_owned(),
        filter: Some(Filter::must(conditions)),
        limit: Some(u32::try_from(ids.len()).unwrap_or(u32::MAX)),
        with_payload: Some(payload_selector(&["doc_id"])),
        with_vectors: Some(no_vectors()),
        ..Default::default()
    })
}

/// The document ids of an answer to [`readable_request`] that were asked for (a point id is a
/// hash of the document id: the stored id must be the one asked).
pub(crate) fn readable_ids(points: Vec<RetrievedPoint>, asked: &[String]) -> HashSet<String> {
    points
        .into_iter()
        .filter_map(|p| match p.payload.get("doc_id")?.kind.as_ref()? {
            Kind::StringValue(id) if asked.contains(id) => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// The request deleting `ids`, answered once they are gone.
pub(crate) fn delete_request(collection: &str, ids: Vec<PointId>) -> DeletePoints {
    DeletePoints {
        collection_name: collection.to_owned(),
        wait: Some(true),
        points: Some(PointsSelector {
            points_selector_one_of: Some(PointsSelectorOneOf::Points(PointsIdsList { ids })),
        }),
        ..Default::default()
    }
}

/// The request counting every point exactly.
pub(crate) fn count_request(collection: &str) -> CountPoints {
    CountPoints {
        collection_name: collection.to_owned(),
        exact: Some(true),
        ..Default::default()
    }
}

/// The conditions `filters` put on every point returned: the date range, and the documents the
/// asker may read. `None` when no point can pass (an asker with no group, unlisted documents
/// private): the server would read an empty "should" as no condition at all.
fn filter_conditions(filters: &Filters) -> Option<Vec<Condition>> {
    let mut conditions = Vec::new();
    if let Some(range) = filters.date_range {
        conditions.push(Condition::range(
            DATE_FIELD,
            Range {
                gte: range.from.map(date_days),
                lte: range.to.map(date_days),
                ..Default::default()
            },
        ));
    }
    if let Some(access) = &filters.access {
        // One of the asker's groups in the document's list, or (when unlisted documents are
        // public) no list at all.
        let mut readable = Vec::new();
        if !access.groups.is_empty() {
            let groups: Vec<String> = access.groups.iter().cloned().collect();
            readable.push(Condition::matches(ACL_FIELD, groups));
        }
        if access.unlisted == Unlisted::Public {
            readable.push(Condition::is_empty(ACL_FIELD));
        }
        if readable.is_empty() {
            return None;
        }
        conditions.push(Filter::should(readable).into());
    }
    Some(conditions)
}

/// The search for `request` in `mode`. `sparse` is the query's BM25 vector (needed for BM25,
/// optional for hybrid), `dense` its embedding (needed for dense and hybrid). `None` when nothing
/// can match: nothing to search with (a BM25 query of stop words only), or nothing the asker
/// may read.
pub(crate) fn query_request(
    collection: &str,
    request: &SearchRequest,
    mode: RetrievalMode,
    sparse: Option<SparseVector>,
    dense: Option<Vec<f32>>,
) -> Option<QueryPoints> {
    let conditions = filter_conditions(&request.filters)?;
    let filter = (!conditions.is_empty()).then(|| Filter::must(conditions));
    // Extra candidates so that ties at the cut are broken by `rank_hits`, not by the server.
    let limit = request.limit + TIE_MARGIN;
    let sparse = sparse.filter(|v| !v.indices.is_empty());
    let nearest_sparse = |v: SparseVector| {
        (
            Query::new_nearest(VectorInput::new_sparse(v.indices, v.values)),
            Some(SPARSE_VECTOR.to_owned()),
        )
    };
    let nearest_dense = |v: Vec<f32>| {
        (
            Query::new_nearest(VectorInput::new_dense(v)),
            Some(DENSE_VECTOR.to_owned()),
        )
    };
    let (prefetch, (query, using)) = match mode {
        RetrievalMode::Bm25 => (Vec::new(), nearest_sparse(sparse?)),
        RetrievalMode::Dense => (Vec::new(), nearest_dense(dense?)),
        RetrievalMode::Hybrid => {
            let prefetch = |(query, using): (Query, Option<String>)| PrefetchQuery {
                query: Some(query),
                using,
                filter: filter.clone(),
                limit: Some(PREFETCH_LIMIT.max(limit) as u64),
                ..Default::default()
            };
            let mut prefetches = vec![prefetch(nearest_dense(dense?))];
            prefetches.extend(sparse.map(nearest_sparse).map(prefetch));
            // Plain RRF: the server's k is `RRF_K`, which the embedded index uses too.
            (prefetches, (Query::new_fusion(Fusion::Rrf), None))
        }
    };
    Some(QueryPoints {
        collection_name: collection.to_owned(),
        prefetch,
        query: Some(query),
        using,
        filter,
        limit: Some(limit as u64),
        with_payload: Some(whole_payload()),
        with_vectors: Some(no_vectors()),
        ..Default::default()
    })
}

/// The newest `most_recent` dated documents (at most `limit`), in the date range if there is one;
/// `None` when the asker can read nothing.
pub(crate) fn most_recent_request(
    collection: &str,
    request: &SearchRequest,
) -> Option<ScrollPoints> {
    let n = request.filters.most_recent.unwrap_or(0).min(request.limit);
    // Only dated points: ordering alone would not say what an undated point's place is.
    let has_date = Condition::range(
        DATE_FIELD,
        Range {
            gte: Some(f64::MIN),
            ..Default::default()
        },
    );
    let conditions = filter_conditions(&request.filters)?
        .into_iter()
        .chain([has_date]);
    Some(ScrollPoints {
        collection_name: collection.to_owned(),
        filter: Some(Filter::must(conditions)),
        limit: Some(u32::try_from(n).unwrap_or(u32::MAX)),
        with_payload: Some(whole_payload()),
        with_vectors: Some(no_vectors()),
        order_by: Some(OrderBy {
            key: DATE_FIELD.to_owned(),
            direction: Some(Direction::Desc.into()),
            start_from: None,
        }),
        ..Default::default()
    })
}

/// The hits of a search: points that are not Ferret documents (no `doc_id`) are skipped, the rest
/// ranked best first, ties by id, cut to `limit`.
pub(crate) fn hits_from(points: Vec<ScoredPoint>, backend: &str, limit: usize) -> Vec<Hit> {
    let hits = points
        .into_iter()
        .filter_map(|p| to_hit(p.score, payload_json(p.payload), backend))
        .collect();
    rank_hits(hits, limit)
}

/// The hits of a most-recent scroll, newest first, scored from 1 down as the embedded index does.
pub(crate) fn recent_hits(points: Vec<RetrievedPoint>, backend: &str) -> Vec<Hit> {
    let count = points.len().max(1) as f32;
    points
        .into_iter()
        .enumerate()
        .filter_map(|(rank, p)| to_hit(1.0 - rank as f32 / count, payload_json(p.payload), backend))
        .collect()
}

/// A JSON value as a Qdrant one. Integers stay integers; other numbers become doubles.
pub(crate) fn to_value(json: serde_json::Value) -> Value {
    use serde_json::Value as Json;
    let kind = match json {
        Json::Null => Kind::NullValue(NullValue::NullValue.into()),
        Json::Bool(b) => Kind::BoolValue(b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Kind::IntegerValue(i),
            None => Kind::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Kind::StringValue(s),
        Json::Array(items) => Kind::ListValue(ListValue {
            values: items.into_iter().map(to_value).collect(),
        }),
        Json::Object(fields) => Kind::StructValue(Struct {
            fields: fields.into_iter().map(|(k, v)| (k, to_value(v))).collect(),
        }),
    };
    Value { kind: Some(kind) }
}

/// A Qdrant value as JSON; a number JSON cannot hold (NaN, infinity) becomes null.
pub(crate) fn to_json(value: Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value.kind {
        None | Some(Kind::NullValue(_)) => Json::Null,
        Some(Kind::BoolValue(b)) => Json::Bool(b),
        Some(Kind::IntegerValue(i)) => Json::from(i),
        Some(Kind::DoubleValue(d)) => {
            serde_json::Number::from_f64(d).map_or(Json::Null, Json::Number)
        }
        Some(Kind::StringValue(s)) => Json::String(s),
        Some(Kind::ListValue(list)) => Json::Array(list.values.into_iter().map(to_json).collect()),
        Some(Kind::StructValue(s)) => Json::Object(payload_json(s.fields)),
    }
}

/// A stored payload as a JSON object.
pub(crate) fn payload_json(
    payload: HashMap<String, Value>,
) -> serde_json::Map<String, serde_json::Value> {
    payload.into_iter().map(|(k, v)| (k, to_json(v))).collect()
}

#[cfg(test)]
mod tests;
