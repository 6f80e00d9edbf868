//! The query history (`GET …/queries`): newest first, each page keeping what the caller may
//! see; `reviewer=me` keeps what the caller can act on as a reviewer.

use std::collections::HashMap;

use http::{Response, StatusCode};

use crate::model::{Principal, QueryStatus};
use crate::storage::QueryFilter;
use crate::validate::ValidationErrors;

use super::super::call::{page_request, split_page};
use super::super::error::ApiError;
use super::super::render::{PageView, QueryView};
use super::super::response::{ResponseBody, json_response};
use super::Queries;

impl Queries {
    pub(super) async fn query_history(
        &self,
        principal: &Principal,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let page = crate::validate::parse_page_query(query)?;
        let params: HashMap<String, String> =
            form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .filter(|(_, value)| !value.is_empty())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
        // An empty `status=` names no status either: 422 (docs/api.md, "Finding records").
        let status = crate::validate::parse_named_parameter::<QueryStatus>(query, "status")?;
        // `reviewer=me`: only what the caller can act on as a reviewer (docs/queries.md, "Reviews"); an
        // empty `reviewer=` is no `me` either.
        let reviewer = crate::validate::given_parameter(query, "reviewer");
        let as_reviewer = match reviewer.as_deref() {
            None => false,
            Some("me") => true,
            Some(_) => {
                return Err(ValidationErrors::single(
                    "reviewer",
                    "must be \"me\": a reviewer lists only what they can act on",
                )
                .into());
            }
        };
        // Authors are stored in their normal form: so is the one asked for.
        let author = params
            .get("author")
            .map(|author| crate::model::identity::normalized(author));
        let filter = QueryFilter {
            database_id: params.get("database_id").map(String::as_str),
            author: author.as_deref(),
            status,
        };
        let items = self
            .storage
            .list_queries(page_request(&page), filter)
            .await?;
        let (items, next) = split_page(items, &page, |q| q.id.to_string());
        // A page keeps what the principal may see: it may be shorter than `limit` (docs/queries.md).
        let mut visible = Vec::with_capacity(items.len());
        let mut allowed: HashMap<String, bool> = HashMap::new();
        let mut reviews: HashMap<String, bool> = HashMap::new();
        for query in items {
            if as_reviewer {
                let open = matches!(
                    query.status,
                    QueryStatus::Ready | QueryStatus::AwaitingReview
                );
                if !open
                    || crate::model::identity::same(&query.author, &principal.user)
                    || query.reviewed_by(&principal.user)
                {
                    continue;
                }
                let may = if let Some(known) = reviews.get(&query.database_id) {
                    *known
                } else {
                    let may = match self.storage.database(&query.database_id).await? {
                        Some(db) => self.admission.may_review(principal, &db).await?,
                        None => false,
                    };
                    reviews.insert(query.database_id.clone(), may);
                    may
                };
                if !may {
                    continue;
                }
            }
            let sees = if principal.sees_without_grant(&query) {
                true
            } else if let Some(known) = allowed.get(&query.database_id) {
                *known
            } else {
                let sees = match self.storage.database(&query.database_id).await? {
                    Some(db) => self.admission.may_query(principal, &db).await?,
                    None => false,
                };
                allowed.insert(query.database_id.clone(), sees);
                sees
            };
            if sees {
                visible.push(query);
            }
        }
        let data: Vec<QueryView<'_>> = visible.iter().map(QueryView::from).collect();
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }
}
