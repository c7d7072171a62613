use ferret_core::RetryClass;

/// The retry class of a failed HTTP call to a model provider, from its status, its
/// `Retry-After` header and its error body.
///
/// 429 is a rate limit unless the body says the quota is exhausted, which no retry fixes;
/// a 400, 413 or 500 that says the context is too long is its own class, since only a shorter
/// prompt helps; other 5xx and 408 are transient; every other 4xx is permanent.
pub fn classify_http_status(status: u16, retry_after: Option<&str>, body: &str) -> RetryClass {
    let body = body.to_lowercase();
    match status {
        429 if body.contains("insufficient_quota")
            || body.contains("quota exceeded")
            || body.contains("exceeded your current quota") =>
        {
            RetryClass::Permanent
        }
        429 => RetryClass::rate_limited(retry_after),
        // OpenAI's wording, then llama-cpp-python's and llama-server's.
        400 | 413 | 500
            if body.contains("context_length_exceeded")
                || body.contains("maximum context length")
                || body.contains("too many tokens")
                || body.contains("exceed context window")
                || body.contains("exceeds the available context size") =>
        {
            RetryClass::ContextTooLong
        }
        408 | 500..=599 => RetryClass::Transient,
        _ => RetryClass::Permanent,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn provider_failures_are_classified() {
        let quota = r#"{"error":{"type":"insufficient_quota","message":"You exceeded your current quota"}}"#;
        let context = r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}"#;
        let table: [(u16, Option<&str>, &str, RetryClass); 12] = [
            (
                429,
                Some("2"),
                "{}",
                RetryClass::RateLimited {
                    retry_after: Some(Duration::from_secs(2)),
                },
            ),
            (
                429,
                None,
                "slow down",
                RetryClass::RateLimited { retry_after: None },
            ),
            (
                429,
                Some("soon"),
                "{}",
                RetryClass::RateLimited { retry_after: None },
            ),
            (429, Some("1"), quota, RetryClass::Permanent),
            (408, None, "", RetryClass::Transient),
            (500, None, "", RetryClass::Transient),
            (503, Some("5"), "", RetryClass::Transient),
            (400, None, context, RetryClass::ContextTooLong),
            (
                400,
                None,
                r#"{"error":{"message":"Requested tokens (3012) exceed context window of 2048"}}"#,
                RetryClass::ContextTooLong,
            ),
            (
                500,
                None,
                r#"{"error":{"code":500,"message":"the request exceeds the available context size, try increasing it"}}"#,
                RetryClass::ContextTooLong,
            ),
            (
                400,
                None,
                r#"{"error":"bad model name"}"#,
                RetryClass::Permanent,
            ),
            (401, None, "invalid api key", RetryClass::Permanent),
        ];
        for (status, retry_after, body, expected) in table {
            assert_eq!(
                classify_http_status(status, retry_after, body),
                expected,
                "{status} {retry_after:?} {body}"
            );
        }
    }
}
