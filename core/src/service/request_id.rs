//! [`RequestId`]: the id of one request, echoed in `x-request-id` and carried by every log line
//! of the request (the `request` span's `request_id` field).

use std::fmt;

use http::{HeaderMap, HeaderName, HeaderValue, Request};

/// The header a request id comes in and goes back in.
pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The longest caller-given request id kept; a longer one (or one with other characters than
/// letters, digits and `-._:@/+=`) is replaced by a new id.
pub const REQUEST_ID_MAX: usize = 128;

/// The id of one request: the caller's `x-request-id` when it is usable, else a new ULID. Held
/// as the header value it goes back in (cheap to clone).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestId(HeaderValue);

impl RequestId {
    /// The id a server put in the request's extensions, else the caller's `x-request-id`, else
    /// a new one.
    pub fn of<B>(request: &Request<B>) -> Self {
        request
            .extensions()
            .get::<RequestId>()
            .cloned()
            .unwrap_or_else(|| Self::from_headers(request.headers()))
    }

    /// The caller's `x-request-id` when it is usable, else a new id.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        headers
            .get(&REQUEST_ID_HEADER)
            .filter(|value| usable(value.as_bytes()))
            .map(|value| Self(value.clone()))
            .unwrap_or_else(Self::generate)
    }

    /// A new id: a ULID in lower case.
    pub fn generate() -> Self {
        let mut text = [0u8; ulid::ULID_LEN];
        ulid::Ulid::new().array_to_str(&mut text);
        text.make_ascii_lowercase();
        // Owned by its bytes from the start: cloning it (the answer's header, the log line)
        // then only counts a reference, where a copied slice would be moved to the heap again.
        Self(
            HeaderValue::from_maybe_shared(bytes::Bytes::from_owner(text))
                .unwrap_or_else(|_| HeaderValue::from_static("invalid")),
        )
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        // Usable ids and ULIDs are visible ASCII.
        self.0.to_str().unwrap_or("invalid")
    }

    /// The id as a header value.
    pub fn header_value(&self) -> HeaderValue {
        self.0.clone()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn usable(value: &[u8]) -> bool {
    (1..=REQUEST_ID_MAX).contains(&value.len())
        && value
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:@/+=".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usable_caller_id_is_kept_and_others_are_replaced() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(&REQUEST_ID_HEADER, HeaderValue::from_str(value).unwrap());
            RequestId::from_headers(&headers)
        };
        assert_eq!(with("req-42.a:b@c/d+e=f").as_str(), "req-42.a:b@c/d+e=f");
        for refused in ["", "two words", "quote\"", &"x".repeat(129)] {
            let id = with(refused);
            assert_ne!(id.as_str(), refused);
            assert_eq!(id.as_str().len(), 26, "a new ULID for {refused:?}");
        }
        let fresh = RequestId::from_headers(&HeaderMap::new());
        assert_ne!(fresh, RequestId::generate());
        let mut request = Request::new(());
        request
            .extensions_mut()
            .insert(RequestId(HeaderValue::from_static("set-by-server")));
        assert_eq!(RequestId::of(&request).as_str(), "set-by-server");
    }
}
