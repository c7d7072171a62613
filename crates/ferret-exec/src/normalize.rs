/// The cache's view of a query: lowercase, whitespace collapsed, word order ignored.
pub fn normalize_query(query: &str) -> String {
    let mut words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
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
