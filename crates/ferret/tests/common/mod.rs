//! Helpers shared by the facade's test files.

use std::sync::Once;

use ferret::Response;

/// Index the default corpus under a folder of this test process, not the user's cache.
pub fn use_temporary_ferret_home() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let home = std::env::temp_dir().join(format!("ferret-facade-tests-{}", std::process::id()));
        std::env::set_var("FERRET_HOME", home);
    });
}

/// Every marker in the answer has a citation, and every citation points at a listed hit.
pub fn assert_citations_resolve(response: &Response) {
    let answer = response.answer.as_deref().expect("an answer");
    let markers: Vec<usize> = answer
        .match_indices('[')
        .filter_map(|(i, _)| answer[i + 1..].split(']').next()?.parse().ok())
        .collect();
    assert!(!markers.is_empty(), "an answer cites its sources: {answer}");
    for marker in markers {
        let citation = response
            .citations
            .iter()
            .find(|c| c.marker == marker)
            .unwrap_or_else(|| panic!("[{marker}] has no source"));
        assert!(
            response.hits.iter().any(|h| h.id == citation.hit_id),
            "[{marker}] points at no listed hit"
        );
    }
}
