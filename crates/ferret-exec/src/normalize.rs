/// The cache's view of a query: lowercase, whitespace collapsed, word order ignored.
pub fn normalize_query(query: &str) -> String {
    // Lowercased whole, then split: no lowercase letter is whitespace, and a word's end is seen
    // the same either way, so this is the per-word result with one allocation instead of one a word.
    let lower = query.to_lowercase();
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    words.sort_unstable();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_order_case_and_spacing_do_not_change_the_key() {
        assert_eq!(
            normalize_query("  Spring  Boot CGLIB "),
            normalize_query("cglib spring\tboot")
        );
        assert_ne!(
            normalize_query("spring boot"),
            normalize_query("spring boot 3")
        );
    }
}
