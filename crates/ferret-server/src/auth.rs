//! Bearer tokens: when the server is given any, every route but the health probes and
//! `/openapi.json` answers 401
//! to a request without one of them, saying nothing of the index. Tokens are compared in
//! constant time and never logged; the principal a token names is.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::config::BearerToken;

use crate::state::AppState;
use crate::ApiError;

/// Marks a request whose token may add documents: any document (the operator's), or only
/// those its principal may read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MayIngest {
    pub(crate) any_document: bool,
}

/// The token `presented` is, checking every token so that the time taken says nothing about
/// which one came close. A secret two tokens share stands for neither (`ferret serve` refuses
/// to start with one; a service building its own list gets 401s rather than a guess).
fn token_of<'a>(tokens: &'a [BearerToken], presented: &[u8]) -> Option<&'a BearerToken> {
    let mut found = None;
    let mut matches = 0;
    for token in tokens {
        if bool::from(token.secret().ct_eq(presented)) {
            found = Some(token);
            matches += 1;
        }
    }
    (matches == 1).then_some(found).flatten()
}

/// Let a request through when the server takes no tokens, or it carries one it takes and its
/// principal's quota is not spent; the request then carries the [`ferret::Principal`] its
/// searches run for.
pub(crate) async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let tokens = state.tokens();
    // The probes and the API's description tell nothing of the index.
    if tokens.is_empty()
        || matches!(
            request.uri().path(),
            "/healthz" | "/readyz" | "/openapi.json"
        )
    {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| {
            let value = value.as_bytes();
            // The scheme's name is case-insensitive.
            (value.len() > 7 && value[..7].eq_ignore_ascii_case(b"bearer "))
                .then(|| value[7..].trim_ascii())
        });
    let Some(token) = presented.and_then(|presented| token_of(tokens, presented)) else {
        return ApiError::Unauthorized.into_response();
    };
    tracing::debug!(principal = token.principal(), "authenticated");
    if let Err(wait) = state.spend_quota(token.principal()) {
        return ApiError::QuotaExceeded {
            retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
        }
        .into_response();
    }
    request.extensions_mut().insert(state.principal(token));
    if token.may_ingest() {
        request.extensions_mut().insert(MayIngest {
            any_document: token.is_operator(),
        });
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_principal_and_a_near_miss_names_none() {
        let tokens = [
            BearerToken::new("alice", "s3cret-alice").unwrap(),
            BearerToken::new("bob", "s3cret-bob").unwrap(),
        ];
        let principal_of = |presented: &[u8]| token_of(&tokens, presented).map(|t| t.principal());
        assert_eq!(principal_of(b"s3cret-bob"), Some("bob"));
        assert_eq!(principal_of(b"s3cret-bo"), None);
        assert_eq!(principal_of(b""), None);
        assert!(BearerToken::new("eve", "  ").is_none());
        let shared = [
            BearerToken::new("alice", "same").unwrap(),
            BearerToken::new("mallory", "same").unwrap(),
        ];
        assert_eq!(token_of(&shared, b"same").map(|t| t.principal()), None);
        assert_eq!(
            BearerToken::sharing_a_secret(&shared),
            Some(("alice", "mallory"))
        );
        assert_eq!(BearerToken::sharing_a_secret(&tokens), None);
        assert!(!format!("{:?}", tokens[0]).contains("s3cret"));
    }
}
