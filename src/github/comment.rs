//! The sticky pull-request comment: one per pull request and workspace, found again by a hidden
//! marker and by its author, updated in place.
//!
//! This module owns the decisions (which comment is ours, what to create, update or delete)
//! and nothing about HTTP: it talks to a [`Comments`] implementation ([`super::api::Client`], or a
//! fake in the tests).
//!
//! - A comment is ours when its first line is the marker of this workspace AND its author is the
//!   token's identity. A comment by anyone else that carries the marker is never touched.
//! - If several are ours, the oldest is kept and the others deleted.
//! - An unchanged body makes no call.
//! - A create that failed in a way that may have gone through is followed by a new listing
//!   before any new create, so retries cannot make duplicates.

use super::api::{ApiError, Comment};

/// The marker's versioned prefix.
pub const MARKER_PREFIX: &str = "<!-- velaris-ratchet:v1 workspace=";

/// The hidden first line that names the comment of one workspace. The workspace path is
/// percent-encoded outside `[A-Za-z0-9._/]` so that it cannot end the HTML comment.
pub fn marker(workspace: &str) -> String {
    let mut enc = String::new();
    for b in workspace.bytes() {
        if b.is_ascii_alphanumeric() || b"._/".contains(&b) {
            enc.push(b as char);
        } else {
            enc.push_str(&format!("%{b:02X}"));
        }
    }
    format!("{MARKER_PREFIX}{enc} -->")
}

/// What the comment API must offer.
pub trait Comments {
    fn list(&self, number: u64) -> Result<Vec<Comment>, ApiError>;
    fn create(&self, number: u64, body: &str) -> Result<Comment, ApiError>;
    fn update(&self, id: u64, body: &str) -> Result<Comment, ApiError>;
    fn delete(&self, id: u64) -> Result<(), ApiError>;
}

impl Comments for super::api::Client {
    fn list(&self, number: u64) -> Result<Vec<Comment>, ApiError> {
        self.list_comments(number)
    }
    fn create(&self, number: u64, body: &str) -> Result<Comment, ApiError> {
        self.create_comment(number, body)
    }
    fn update(&self, id: u64, body: &str) -> Result<Comment, ApiError> {
        self.update_comment(id, body)
    }
    fn delete(&self, id: u64) -> Result<(), ApiError> {
        self.delete_comment(id)
    }
}

/// What happened to the comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Posted {
    Created { id: u64, url: Option<String> },
    Updated { id: u64, url: Option<String> },
    /// Ours already said exactly this: no call was made.
    Unchanged { id: u64, url: Option<String> },
}

impl Posted {
    pub fn url(&self) -> Option<&str> {
        match self {
            Posted::Created { url, .. } | Posted::Updated { url, .. } | Posted::Unchanged { url, .. } => url.as_deref(),
        }
    }

    pub fn verb(&self) -> &'static str {
        match self {
            Posted::Created { .. } => "created",
            Posted::Updated { .. } => "updated",
            Posted::Unchanged { .. } => "unchanged",
        }
    }
}

/// The result of [`upsert`]: what was done, and what was seen on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upserted {
    pub posted: Posted,
    /// Duplicates of ours that were deleted.
    pub deleted: Vec<u64>,
    /// Comments by others that carry the marker, left alone.
    pub foreign: Vec<(u64, String)>,
    /// The short body was posted because GitHub refused the full one.
    pub shortened: bool,
}

fn same_login(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Line endings as GitHub may store them do not make a body different.
fn normalized(s: &str) -> String {
    s.replace("\r\n", "\n").trim_end().to_string()
}

fn carries(c: &Comment, marker: &str) -> bool {
    c.body.as_deref().and_then(|b| b.lines().next()).is_some_and(|l| l.trim_end() == marker)
}

/// Ours (oldest first) and the foreign comments with the marker.
fn split<'a>(all: &'a [Comment], marker: &str, me: &str) -> (Vec<&'a Comment>, Vec<&'a Comment>) {
    let (mut ours, foreign): (Vec<&Comment>, Vec<&Comment>) = all
        .iter()
        .filter(|c| carries(c, marker))
        .partition(|c| c.user.as_ref().is_some_and(|u| same_login(&u.login, me)));
    ours.sort_by(|a, b| (&a.created_at, a.id).cmp(&(&b.created_at, b.id)));
    (ours, foreign)
}

/// Write with `body`, or with `short` if GitHub refuses `body` as unprocessable (too long).
fn with_fallback<T>(
    body: &str,
    short: &str,
    shortened: &mut bool,
    f: impl Fn(&str) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    match f(body) {
        Err(ApiError::Unprocessable { .. }) if short != body => {
            *shortened = true;
            f(short)
        }
        other => other,
    }
}

/// Make the comment of `marker` on issue `number` say `body` (whose first line must be
/// `marker`). `short` is posted instead if GitHub refuses `body`. `me` is the token's login.
pub fn upsert(api: &dyn Comments, number: u64, marker: &str, me: &str, body: &str, short: &str) -> Result<Upserted, ApiError> {
    debug_assert!(body.starts_with(marker) && short.starts_with(marker));
    let mut shortened = false;
    let mut deleted = Vec::new();
    let mut creates = 0;
    loop {
        let all = api.list(number)?;
        let (ours, foreign) = split(&all, marker, me);
        let foreign: Vec<(u64, String)> =
            foreign.iter().map(|c| (c.id, c.user.as_ref().map(|u| u.login.clone()).unwrap_or_default())).collect();
        if let Some((keep, rest)) = ours.split_first() {
            for d in rest {
                api.delete(d.id)?;
                deleted.push(d.id);
            }
            let current = keep.body.as_deref().unwrap_or("");
            let posted = if normalized(current) == normalized(body) || (normalized(current) == normalized(short) && shortened) {
                Posted::Unchanged { id: keep.id, url: keep.html_url.clone() }
            } else {
                let c = with_fallback(body, short, &mut shortened, |b| api.update(keep.id, b))?;
                Posted::Updated { id: c.id, url: c.html_url.or_else(|| keep.html_url.clone()) }
            };
            return Ok(Upserted { posted, deleted, foreign, shortened });
        }
        creates += 1;
        match with_fallback(body, short, &mut shortened, |b| api.create(number, b)) {
            Ok(c) => return Ok(Upserted { posted: Posted::Created { id: c.id, url: c.html_url }, deleted, foreign, shortened }),
            // It may exist now: list again before creating again, twice at most.
            Err(e) if e.maybe_applied() && creates < 3 => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::api::User;
    use std::cell::RefCell;

    #[derive(Default)]
    struct Fake {
        comments: RefCell<Vec<Comment>>,
        calls: RefCell<Vec<String>>,
        /// The next creates are carried out but answered with a 502.
        lost_answers: RefCell<u32>,
        max_len: usize,
    }

    impl Fake {
        fn with(comments: Vec<(u64, &str, &str)>) -> Fake {
            let f = Fake { max_len: usize::MAX, ..Fake::default() };
            for (id, login, body) in comments {
                f.push(id, login, body);
            }
            f
        }
        fn push(&self, id: u64, login: &str, body: &str) {
            self.comments.borrow_mut().push(Comment {
                id,
                body: Some(body.into()),
                user: Some(User { login: login.into() }),
                html_url: Some(format!("https://x/c/{id}")),
                created_at: Some(format!("2026-01-01T00:00:{id:02}Z")),
            });
        }
        fn calls(&self) -> Vec<String> {
            self.calls.borrow().clone()
        }
    }

    impl Comments for Fake {
        fn list(&self, _: u64) -> Result<Vec<Comment>, ApiError> {
            self.calls.borrow_mut().push("list".into());
            Ok(self.comments.borrow().clone())
        }
        fn create(&self, _: u64, body: &str) -> Result<Comment, ApiError> {
            self.calls.borrow_mut().push("create".into());
            if body.len() > self.max_len {
                return Err(ApiError::Unprocessable { message: "body is too long".into() });
            }
            let id = 100 + self.comments.borrow().len() as u64;
            self.push(id, "github-actions[bot]", body);
            if *self.lost_answers.borrow() > 0 {
                *self.lost_answers.borrow_mut() -= 1;
                return Err(ApiError::Status { status: 502, message: "bad gateway".into(), maybe_applied: true });
            }
            Ok(self.comments.borrow().last().unwrap().clone())
        }
        fn update(&self, id: u64, body: &str) -> Result<Comment, ApiError> {
            self.calls.borrow_mut().push(format!("update {id}"));
            let mut cs = self.comments.borrow_mut();
            let c = cs.iter_mut().find(|c| c.id == id).unwrap();
            c.body = Some(body.into());
            Ok(c.clone())
        }
        fn delete(&self, id: u64) -> Result<(), ApiError> {
            self.calls.borrow_mut().push(format!("delete {id}"));
            self.comments.borrow_mut().retain(|c| c.id != id);
            Ok(())
        }
    }

    const ME: &str = "github-actions[bot]";

    fn body(m: &str, text: &str) -> String {
        format!("{m}\n{text}")
    }

    #[test]
    fn markers_cannot_end_the_html_comment() {
        assert_eq!(marker("."), "<!-- velaris-ratchet:v1 workspace=. -->");
        assert_eq!(marker("crates/my-tool"), "<!-- velaris-ratchet:v1 workspace=crates/my%2Dtool -->");
        assert!(!marker("a-->b <x>").contains("-->b"));
    }

    #[test]
    fn create_then_unchanged_then_update() {
        let m = marker(".");
        let f = Fake::with(vec![(1, "someone", "hello")]);
        let a = upsert(&f, 5, &m, ME, &body(&m, "v1"), &m).unwrap();
        assert!(matches!(a.posted, Posted::Created { .. }));
        let b = upsert(&f, 5, &m, ME, &body(&m, "v1\r\n"), &m).unwrap();
        assert!(matches!(b.posted, Posted::Unchanged { .. }));
        let c = upsert(&f, 5, &m, ME, &body(&m, "v2"), &m).unwrap();
        assert_eq!(c.posted.verb(), "updated");
        assert_eq!(f.calls(), ["list", "create", "list", "list", "update 101"]);
    }

    #[test]
    fn foreign_comments_with_the_marker_are_left_alone() {
        let m = marker(".");
        let f = Fake::with(vec![(1, "mallory", &body(&m, "fake verdict"))]);
        let a = upsert(&f, 5, &m, ME, &body(&m, "real"), &m).unwrap();
        assert_eq!(a.foreign, vec![(1, "mallory".to_string())]);
        assert!(matches!(a.posted, Posted::Created { .. }));
        assert_eq!(f.comments.borrow()[0].body.as_deref(), Some(body(&m, "fake verdict").as_str()));
    }

    #[test]
    fn other_workspaces_are_other_comments() {
        let (ma, mb) = (marker("a"), marker("b"));
        let f = Fake::with(vec![(1, ME, &body(&ma, "a"))]);
        let r = upsert(&f, 5, &mb, ME, &body(&mb, "b"), &mb).unwrap();
        assert!(matches!(r.posted, Posted::Created { .. }));
        assert_eq!(f.comments.borrow().len(), 2);
    }

    #[test]
    fn duplicates_keep_the_oldest() {
        let m = marker(".");
        let f = Fake::with(vec![(3, ME, &body(&m, "x")), (2, "GitHub-Actions[bot]", &body(&m, "y")), (4, ME, &body(&m, "z"))]);
        let r = upsert(&f, 5, &m, ME, &body(&m, "new"), &m).unwrap();
        assert_eq!(r.deleted, vec![3, 4]);
        assert_eq!(r.posted, Posted::Updated { id: 2, url: Some("https://x/c/2".into()) });
    }

    #[test]
    fn a_create_that_went_through_is_not_repeated() {
        let m = marker(".");
        let f = Fake::with(vec![]);
        *f.lost_answers.borrow_mut() = 1;
        let r = upsert(&f, 5, &m, ME, &body(&m, "v"), &m).unwrap();
        assert!(matches!(r.posted, Posted::Unchanged { .. }), "{r:?}");
        assert_eq!(f.comments.borrow().len(), 1);
        assert_eq!(f.calls(), ["list", "create", "list"]);
    }

    #[test]
    fn a_refused_body_falls_back_to_the_short_one() {
        let m = marker(".");
        let mut f = Fake::with(vec![]);
        f.max_len = 100;
        let long = body(&m, &"x".repeat(500));
        let short = body(&m, "see the run summary");
        let r = upsert(&f, 5, &m, ME, &long, &short).unwrap();
        assert!(r.shortened);
        assert_eq!(f.comments.borrow()[0].body.as_deref(), Some(short.as_str()));
    }
}
