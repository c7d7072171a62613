//! One exchange against a local mock server: what a provider's answer becomes, and that the key
//! is sent but never shown.

use std::time::Duration;

use ferret_core::{BackendErrorKind, RetryClass};
use ferret_http::{ApiKey, Http, HttpSetupError, KeyForm};
use reqwest::header::AUTHORIZATION;
use serde_json::Value;
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

const SECRET: &str = "s3cret-key-value";

async fn answered(response: ResponseTemplate) -> Result<Value, ferret_core::BackendError> {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(header("authorization", format!("Bearer {SECRET}").as_str()))
        .respond_with(response)
        .mount(&server)
        .await;
    let http = Http::new("hub", Duration::from_secs(2)).unwrap().with_key(
        AUTHORIZATION,
        ApiKey::new(SECRET, "HUB_TOKEN"),
        KeyForm::Bearer,
    );
    http.json(http.get(server.uri().parse().unwrap())).await
}

#[tokio::test]
async fn each_answer_becomes_a_value_or_a_failure_of_its_retry_class() {
    let ok = answered(ResponseTemplate::new(200).set_body_string(r#"{"items": []}"#)).await;
    assert_eq!(ok.unwrap()["items"], Value::Array(Vec::new()));

    let limited = answered(ResponseTemplate::new(429).insert_header("retry-after", "7"))
        .await
        .unwrap_err();
    assert_eq!(limited.kind, BackendErrorKind::RateLimited);
    assert_eq!(
        limited.retry,
        RetryClass::RateLimited {
            retry_after: Some(Duration::from_secs(7))
        }
    );

    let refused = answered(ResponseTemplate::new(401).set_body_string("bad token"))
        .await
        .unwrap_err();
    assert_eq!(refused.kind, BackendErrorKind::Unauthorized);
    assert_eq!(refused.retry, RetryClass::Permanent);
    assert!(refused.message.contains("HUB_TOKEN"), "{}", refused.message);
    assert!(!format!("{refused:?}").contains(SECRET));

    for status in [500, 503] {
        let failed = answered(ResponseTemplate::new(status)).await.unwrap_err();
        assert_eq!(failed.retry, RetryClass::Transient, "{status}");
    }

    let garbled = answered(ResponseTemplate::new(200).set_body_string("{\"items\": [")).await;
    assert_eq!(
        garbled.unwrap_err().kind,
        BackendErrorKind::MalformedResponse
    );

    let slow = answered(
        ResponseTemplate::new(200)
            .set_body_string("{}")
            .set_delay(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    assert_eq!(slow.kind, BackendErrorKind::DeadlineExceeded);
}

#[test]
fn a_missing_key_names_its_variable() {
    assert_eq!(
        ApiKey::from_env("FERRET_TEST_SURELY_UNSET_HUB_KEY").err(),
        Some(HttpSetupError::MissingKey {
            variable: "FERRET_TEST_SURELY_UNSET_HUB_KEY".into()
        })
    );
    assert!(!format!("{:?}", ApiKey::new(SECRET, "HUB_TOKEN")).contains(SECRET));
}
