//! Tests of `requests`.

use chrono::NaiveDate;
use ferret_collection::{bm25_encoder, RRF_K};
use ferret_core::{Access, DateRange};
use qdrant_client::qdrant::{query, CollectionConfig, CollectionParams, PayloadSchemaInfo};

use super::*;

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn request(limit: usize, filters: Filters) -> SearchRequest {
    SearchRequest {
        query: "tomato garden".into(),
        limit,
        filters,
        options: Default::default(),
        text_for: None,
    }
}

fn spring() -> Filters {
    Filters {
        date_range: Some(DateRange {
            from: Some(day("2024-03-01")),
            to: Some(day("2024-05-31")),
        }),
        ..Default::default()
    }
}

fn sparse() -> SparseVector {
    SparseVector {
        indices: vec![3, 7],
        values: vec![1.0, 0.5],
    }
}

#[test]
fn bm25_asks_the_sparse_vector_for_extra_candidates() {
    let built = query_request(
        "journal",
        &request(5, Filters::default()),
        RetrievalMode::Bm25,
        Some(sparse()),
        None,
    )
    .unwrap();
    insta::assert_debug_snapshot!("bm25_query", built);
    let empty = SparseVector::default();
    assert!(
        query_request(
            "journal",
            &request(5, Filters::default()),
            RetrievalMode::Bm25,
            Some(empty),
            None
        )
        .is_none(),
        "stop words only"
    );
}

#[test]
fn dense_asks_the_dense_vector_with_the_date_filter() {
    let built = query_request(
        "journal",
        &request(3, spring()),
        RetrievalMode::Dense,
        None,
        Some(vec![0.5, 0.25, 0.0]),
    )
    .unwrap();
    insta::assert_debug_snapshot!("dense_query_with_dates", built);
}

#[test]
fn hybrid_fuses_two_filtered_prefetches_by_rrf() {
    let built = query_request(
        "journal",
        &request(3, spring()),
        RetrievalMode::Hybrid,
        Some(sparse()),
        Some(vec![0.5, 0.25]),
    )
    .unwrap();
    assert_eq!(built.prefetch.len(), 2);
    for prefetch in &built.prefetch {
        assert_eq!(
            prefetch.filter, built.filter,
            "the filter holds inside each prefetch too"
        );
        assert_eq!(prefetch.limit, Some(PREFETCH_LIMIT as u64));
    }
    assert_eq!(
        built.query.as_ref().and_then(|q| q.variant.clone()),
        Some(query::Variant::Fusion(Fusion::Rrf.into()))
    );
    assert_eq!(built.using, None);
    insta::assert_debug_snapshot!("hybrid_query", built);

    // A query of stop words leaves the dense side alone.
    let built = query_request(
        "journal",
        &request(3, Filters::default()),
        RetrievalMode::Hybrid,
        Some(SparseVector::default()),
        Some(vec![1.0]),
    )
    .unwrap();
    assert_eq!(
        built
            .prefetch
            .iter()
            .map(|p| p.using.as_deref())
            .collect::<Vec<_>>(),
        [Some(DENSE_VECTOR)]
    );
    // Large limits widen the prefetches so fusion sees every candidate it may return.
    let built = query_request(
        "journal",
        &request(500, Filters::default()),
        RetrievalMode::Hybrid,
        Some(sparse()),
        Some(vec![1.0]),
    )
    .unwrap();
    assert!(built.prefetch.iter().all(|p| p.limit == Some(510)));
}

#[test]
fn an_askers_groups_filter_every_side_of_the_search() {
    let filters = Filters {
        access: Some(Access::new(["staff", "finance"], Unlisted::Public)),
        ..spring()
    };
    let built = query_request(
        "journal",
        &request(3, filters),
        RetrievalMode::Hybrid,
        Some(sparse()),
        Some(vec![0.5, 0.25]),
    )
    .unwrap();
    for prefetch in &built.prefetch {
        assert_eq!(prefetch.filter, built.filter, "no side escapes the groups");
    }
    insta::assert_debug_snapshot!("hybrid_query_with_access", built.filter);

    // Documents private by default: only the groups' own documents, newest first too.
    let filters = Filters {
        most_recent: Some(5),
        access: Some(Access::new(["staff"], Unlisted::Private)),
        ..Default::default()
    };
    insta::assert_debug_snapshot!(
        "most_recent_with_private_access",
        most_recent_request("journal", &request(5, filters))
            .unwrap()
            .filter
    );
    // No group, and nothing unlisted to read: no request is built that could match all.
    let nothing = Filters {
        access: Some(Access::new(Vec::<String>::new(), Unlisted::Private)),
        ..Default::default()
    };
    assert!(most_recent_request("journal", &request(5, nothing.clone())).is_none());
    let query = query_request(
        "journal",
        &request(5, nothing),
        RetrievalMode::Bm25,
        Some(sparse()),
        None,
    );
    assert!(query.is_none());
}

#[test]
fn an_access_check_asks_for_the_ids_under_the_askers_groups() {
    let ids = vec!["memo".to_owned(), "plan".to_owned()];
    let bob = Access::new(["legal"], Unlisted::Private);
    let scroll = readable_request("docs", &ids, &bob).unwrap();
    assert_eq!(scroll.limit, Some(2));
    let filter = format!("{:?}", scroll.filter.unwrap());
    assert!(
        filter.contains("legal") && filter.contains("HasId"),
        "{filter}"
    );
    assert!(readable_request(
        "docs",
        &ids,
        &Access::new(Vec::<String>::new(), Unlisted::Private)
    )
    .is_none());
    let answer = |doc_id: &str| RetrievedPoint {
        id: Some(PointId::from(point_id(doc_id))),
        payload: HashMap::from([("doc_id".to_owned(), Value::from(doc_id.to_owned()))]),
        ..Default::default()
    };
    let found = readable_ids(vec![answer("memo"), answer("stranger")], &ids);
    assert_eq!(found, HashSet::from(["memo".to_owned()]));
}

#[test]
fn the_servers_default_rrf_k_is_the_one_the_embedded_index_uses() {
    // `Fusion::Rrf` runs with the server's k = 2; if RRF_K changes, send `Rrf { k }` instead.
    assert_eq!(RRF_K, 2);
}

#[test]
fn most_recent_scrolls_dated_points_newest_first() {
    let filters = Filters {
        most_recent: Some(20),
        ..spring()
    };
    let built = most_recent_request("journal", &request(4, filters)).unwrap();
    assert_eq!(built.limit, Some(4), "never more than the request's limit");
    insta::assert_debug_snapshot!("most_recent_scroll", built);
    let undated = most_recent_request(
        "journal",
        &request(
            10,
            Filters {
                most_recent: Some(2),
                ..Default::default()
            },
        ),
    )
    .unwrap();
    assert_eq!(
        undated.filter.map(|f| f.must.len()),
        Some(1),
        "only the has-a-date condition"
    );
}

fn meta(dense: bool) -> CollectionMeta {
    CollectionMeta::new(dense.then(|| DenseMeta {
        embedder: "word-hash".into(),
        dimension: 16,
    }))
}

#[test]
fn a_new_collection_has_named_vectors_and_its_parameters_in_metadata() {
    let mut built = collection_request("journal", &meta(true));
    // Struct fields are a HashMap, whose Debug order varies: the metadata is compared as JSON.
    let metadata = std::mem::take(&mut built.metadata);
    insta::assert_debug_snapshot!("create_collection", built);
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("collection_metadata", serde_json::Value::Object(payload_json(metadata)));
    });
    let bm25_only = collection_request("journal", &meta(false));
    assert_eq!(
        bm25_only.vectors_config, None,
        "no dense vector without an embedder"
    );
    assert_eq!(bm25_only.sparse_vectors_config, built.sparse_vectors_config);
}

/// What the server would report for a collection made by `create`.
fn info_of(create: CreateCollection) -> CollectionInfo {
    CollectionInfo {
        config: Some(CollectionConfig {
            params: Some(CollectionParams {
                vectors_config: create.vectors_config,
                sparse_vectors_config: create.sparse_vectors_config,
                ..Default::default()
            }),
            metadata: create.metadata,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn a_collection_reads_back_as_created_and_foreign_ones_are_refused() {
    for dense in [true, false] {
        let mut expected = meta(dense);
        expected.avg_doc_len = Some(7.25);
        assert_eq!(
            meta_from_info(
                "journal",
                &info_of(collection_request("journal", &expected))
            )
            .unwrap(),
            expected
        );
    }
    let reason = |info: CollectionInfo| match meta_from_info("journal", &info) {
        Err(QdrantError::IncompatibleSchema { collection, reason }) => {
            assert_eq!(collection, "journal");
            reason
        }
        other => panic!("expected a schema error, got {other:?}"),
    };
    let mut foreign = collection_request("journal", &meta(false));
    foreign.sparse_vectors_config = None;
    assert!(reason(info_of(foreign)).contains("no sparse vector `bm25`"));

    let mut no_idf = collection_request("journal", &meta(false));
    no_idf.sparse_vectors_config = Some(SparseVectorConfig {
        map: HashMap::from([(SPARSE_VECTOR.to_owned(), SparseVectorParams::default())]),
    });
    assert!(reason(info_of(no_idf)).contains("IDF"));

    let mut no_meta = collection_request("journal", &meta(false));
    no_meta.metadata.clear();
    assert!(reason(info_of(no_meta)).contains("1.16"));

    let mut newer = meta(false);
    newer.format = 2;
    assert!(reason(info_of(collection_request("journal", &newer))).contains("format 2"));

    let mut lying = collection_request("journal", &meta(true));
    lying.vectors_config = None;
    assert!(reason(info_of(lying)).contains("16-dimensional"));
}

#[test]
fn payload_indexes_are_listed_when_missing_and_refused_when_of_another_type() {
    let mut info = info_of(collection_request("journal", &meta(false)));
    assert_eq!(missing_indexes("journal", &info).unwrap().len(), 3);
    let schema = |t: PayloadSchemaType| PayloadSchemaInfo {
        data_type: t.into(),
        ..Default::default()
    };
    info.payload_schema
        .insert(DATE_FIELD.into(), schema(PayloadSchemaType::Float));
    assert_eq!(
        missing_indexes("journal", &info).unwrap(),
        [
            (SOURCE_FIELD, FieldType::Keyword),
            (ACL_FIELD, FieldType::Keyword)
        ]
    );
    info.payload_schema
        .insert(SOURCE_FIELD.into(), schema(PayloadSchemaType::Text));
    assert!(missing_indexes("journal", &info).is_err());
}

fn doc(id: &str, date: Option<&str>) -> Document {
    Document {
        metadata: serde_json::Map::new(),
        acl: None,
        id: id.into(),
        title: format!("Title {id}"),
        text: "Planted tomatoes in the garden.".into(),
        url: Some(format!("https://example.org/{id}")),
        source: "/notes/journal.jsonl".into(),
        date: date.map(day),
    }
}

fn stored(id: &str, date: Option<&str>) -> HashMap<String, Value> {
    payload(&doc(id, date), "h")
        .into_iter()
        .map(|(k, v)| (k, to_value(v)))
        .collect()
}

fn scored(id: &str, score: f32) -> ScoredPoint {
    ScoredPoint {
        id: Some(PointId::from(point_id(id))),
        payload: stored(id, Some("2024-03-02")),
        score,
        ..Default::default()
    }
}

#[test]
fn points_become_hits_ranked_with_ties_by_id_and_foreign_points_skipped() {
    let mut foreign = scored("x", 9.0);
    foreign.payload.remove("doc_id");
    let points = vec![
        scored("b", 1.0),
        foreign,
        scored("c", 2.0),
        scored("a", 1.0),
        scored("d", 0.5),
    ];
    let hits = hits_from(points, "qdrant", 3);
    assert_eq!(
        hits.iter()
            .map(|h| (h.id.0.as_str(), h.score))
            .collect::<Vec<_>>(),
        [("c", 2.0), ("a", 1.0), ("b", 1.0)]
    );
    let a = &hits[1];
    assert_eq!(
        (a.title.as_ref(), a.text.as_ref(), a.backend.as_str()),
        ("Title a", "Planted tomatoes in the garden.", "qdrant")
    );
    assert_eq!(a.url.as_deref(), Some("https://example.org/a"));
    assert_eq!(a.date, Some(day("2024-03-02")));
    assert_eq!(
        a.payload.get(SOURCE_FIELD),
        Some(&serde_json::json!("/notes/journal.jsonl"))
    );
    assert!(
        !a.payload.contains_key("hash") && !a.payload.contains_key(DATE_FIELD),
        "{:?}",
        a.payload
    );
}

#[test]
fn recent_points_score_from_one_down() {
    let retrieved = |id: &str| RetrievedPoint {
        id: Some(PointId::from(point_id(id))),
        payload: stored(id, Some("2024-01-01")),
        ..Default::default()
    };
    let hits = recent_hits(vec![retrieved("new"), retrieved("old")], "qdrant");
    assert_eq!(
        hits.iter()
            .map(|h| (h.id.0.as_str(), h.score))
            .collect::<Vec<_>>(),
        [("new", 1.0), ("old", 0.5)]
    );
}

#[test]
fn stored_hashes_and_stale_chunks_are_read_from_points() {
    let with = |id: u64, key: &str, value: &str| RetrievedPoint {
        id: Some(PointId::from(id)),
        payload: HashMap::from([(key.to_owned(), Value::from(value))]),
        ..Default::default()
    };
    let hashes = stored_hashes(vec![
        with(1, "hash", "h1"),
        with(2, "other", "x"),
        RetrievedPoint::default(),
    ]);
    assert_eq!(hashes, HashMap::from([(1, "h1".to_owned())]));

    let kept = HashSet::from(["keep".to_owned()]);
    let page = vec![
        with(1, "doc_id", "keep"),
        with(2, "doc_id", "gone"),
        with(3, "title", "no doc id"),
    ];
    assert_eq!(
        stale_points(page, &kept),
        [PointId::from(2), PointId::from(3)]
    );
}

#[test]
fn a_document_point_carries_both_vectors_and_the_shared_payload() {
    let encoder = bm25_encoder(Bm25Params {
        avg_doc_len: Some(5.0),
        ..Default::default()
    })
    .unwrap();
    let built = point(
        &doc("j1", Some("2024-03-02")),
        42,
        "h",
        &encoder,
        Some(vec![0.1, 0.2]),
    );
    assert_eq!(built.id, Some(PointId::from(42)));
    let Some(Vectors {
        vectors_options: Some(qdrant_client::qdrant::vectors::VectorsOptions::Vectors(named)),
    }) = built.vectors
    else {
        panic!("named vectors expected: {:?}", built.vectors)
    };
    let mut names: Vec<&str> = named.vectors.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, [SPARSE_VECTOR, DENSE_VECTOR]);
    let json = payload_json(built.payload);
    assert_eq!(json.get("doc_id"), Some(&serde_json::json!("j1")));
    assert_eq!(
        json.get(DATE_FIELD).and_then(serde_json::Value::as_f64),
        Some(19_784.0)
    );
    assert_eq!(json.get("hash"), Some(&serde_json::json!("h")));
}

#[test]
fn json_survives_the_trip_through_qdrant_values() {
    let json = serde_json::json!({"s": "x", "i": -3, "f": 1.5, "whole": 2.0, "b": true, "n": null, "l": [1, "two", {"k": []}]});
    assert_eq!(to_json(to_value(json.clone())), json);
    assert_eq!(
        to_value(serde_json::json!(2.0)).kind,
        Some(Kind::DoubleValue(2.0)),
        "a float stays a float"
    );
    assert_eq!(
        to_json(Value {
            kind: Some(Kind::DoubleValue(f64::NAN))
        }),
        serde_json::Value::Null
    );
    assert_eq!(to_json(Value { kind: None }), serde_json::Value::Null);
}
