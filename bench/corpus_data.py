# ruff: noqa: E501
"""Benchmark tool corpus: a catalog of tools modelled on common MCP servers, and labelled queries.

Pure data built with the short constructors from `bench.specs`. Server and tool names, naming
styles (snake_case, camelCase, dash-case, prefixed) and descriptions follow the public MCP
servers they imitate, including the confusable neighbours a real catalog has (GitHub, GitLab,
Jira and Linear issues; Gmail and Slack messages; Postgres, SQLite and MongoDB queries).
`QUERIES` are phrased the way an agent or user describes a need, independently of any ranking.
"""

from __future__ import annotations

from bench.specs import P, Q, Query, S, ServerSpec, T

# --------------------------------------------------------------------------- filesystem

_FILESYSTEM = S(
    "filesystem",
    "Secure file operations on the local file system, restricted to a set of allowed directories.",
    T(
        "read_file",
        "Read the complete contents of a file from the file system. Handles various text encodings and provides detailed error messages if the file cannot be read. Use the 'head' or 'tail' parameter to read only the first or last N lines. Only works within allowed directories.",
        P("path", description="Path of the file to read", required=True),
        P("head", "integer", "If provided, returns only the first N lines of the file"),
        P("tail", "integer", "If provided, returns only the last N lines of the file"),
    ),
    T(
        "read_multiple_files",
        "Read the contents of multiple files simultaneously. This is more efficient than reading files one by one when you need to analyze or compare multiple files. Each file's content is returned with its path as a reference. Failed reads for individual files won't stop the entire operation.",
        P("paths", "array", "Paths of the files to read", required=True, items="string"),
    ),
    T(
        "read_media_file",
        "Read an image or audio file. Returns the base64 encoded data and MIME type. Only works within allowed directories.",
        P("path", description="Path of the media file", required=True),
    ),
    T(
        "write_file",
        "Create a new file or completely overwrite an existing file with new content. Use with caution as it will overwrite existing files without warning. Handles text content with proper encoding.",
        P("path", description="Path of the file to write", required=True),
        P("content", description="Full text content to write", required=True),
    ),
    T(
        "edit_file",
        "Make line-based edits to a text file. Each edit replaces exact line sequences with new content. Returns a git-style diff showing the changes made.",
        P("path", description="Path of the file to edit", required=True),
        P(
            "edits",
            "array",
            "List of edits, each an object with 'oldText' (text to search for, must match exactly) and 'newText' (text to replace it with)",
            required=True,
            items="object",
        ),
        P("dryRun", "boolean", "Preview changes using git-style diff format", default=False),
    ),
    T(
        "create_directory",
        "Create a new directory or ensure a directory exists. Can create multiple nested directories in one operation. If the directory already exists, this operation will succeed silently.",
        P("path", description="Directory path to create", required=True),
    ),
    T(
        "list_directory",
        "Get a detailed listing of all files and directories in a specified path. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is essential for understanding directory structure and finding specific files within a directory.",
        P("path", description="Directory to list", required=True),
    ),
    T(
        "list_directory_with_sizes",
        "Get a detailed listing of all files and directories in a specified path, including sizes. Results distinguish between files and directories with [FILE] and [DIR] prefixes and end with a summary of total size.",
        P("path", description="Directory to list", required=True),
        P(
            "sortBy",
            description="Sort entries by name or size",
            enum=("name", "size"),
            default="name",
        ),
    ),
    T(
        "directory_tree",
        "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory), and 'children' for directories. Files have no children array, while directories always have a children array (which may be empty).",
        P("path", description="Root directory of the tree", required=True),
        P("excludePatterns", "array", "Glob patterns to exclude", items="string"),
    ),
    T(
        "move_file",
        "Move or rename files and directories. Can move files between directories and rename them in a single operation. If the destination exists, the operation will fail. Works across different directories and can be used for simple renaming within the same directory.",
        P("source", description="Current path", required=True),
        P("destination", description="New path", required=True),
    ),
    T(
        "search_files",
        "Recursively search for files and directories matching a pattern. Searches through all subdirectories from the starting path. The search is case-insensitive and matches partial names. Returns full paths to all matching items.",
        P("path", description="Directory to start searching from", required=True),
        P("pattern", description="Glob or partial name to match, e.g. '*.log'", required=True),
        P("excludePatterns", "array", "Glob patterns to skip", items="string"),
    ),
    T(
        "get_file_info",
        "Retrieve detailed metadata about a file or directory. Returns comprehensive information including size, creation time, last modified time, permissions, and type. This tool is perfect for understanding file characteristics without reading the actual content.",
        P("path", description="Path of the file or directory", required=True),
    ),
    T(
        "list_allowed_directories",
        "Returns the list of directories that this server is allowed to access. Use this to understand which directories are available before trying to access files.",
    ),
)

# --------------------------------------------------------------------------- git

_REPO = P("repo_path", description="Path to the Git repository", required=True)

_GIT = S(
    "git",
    "Tools to read, search and manipulate a local Git repository.",
    T("git_status", "Shows the working tree status", _REPO),
    T(
        "git_diff_unstaged",
        "Shows changes in the working directory that are not yet staged",
        _REPO,
        P("context_lines", "integer", "Number of context lines to show", default=3),
    ),
    T(
        "git_diff_staged",
        "Shows changes that are staged for commit",
        _REPO,
        P("context_lines", "integer", "Number of context lines to show", default=3),
    ),
    T(
        "git_diff",
        "Shows differences between branches or commits",
        _REPO,
        P("target", description="Branch, tag or commit to compare with", required=True),
        P("context_lines", "integer", "Number of context lines to show", default=3),
    ),
    T(
        "git_commit",
        "Records changes to the repository",
        _REPO,
        P("message", description="Commit message", required=True),
    ),
    T(
        "git_add",
        "Adds file contents to the staging area",
        _REPO,
        P("files", "array", "Paths of the files to stage", required=True, items="string"),
    ),
    T("git_reset", "Unstages all staged changes", _REPO),
    T(
        "git_log",
        "Shows the commit logs",
        _REPO,
        P("max_count", "integer", "Maximum number of commits to show", default=10),
        P(
            "start_timestamp",
            description="Only commits after this date (ISO 8601 or relative, e.g. '2 weeks ago')",
        ),
        P("end_timestamp", description="Only commits before this date"),
    ),
    T(
        "git_create_branch",
        "Creates a new branch from an optional base branch",
        _REPO,
        P("branch_name", description="Name of the new branch", required=True),
        P("base_branch", description="Branch to start from; defaults to the current branch"),
    ),
    T(
        "git_checkout",
        "Switches branches",
        _REPO,
        P("branch_name", description="Branch to check out", required=True),
    ),
    T(
        "git_show",
        "Shows the contents of a commit",
        _REPO,
        P("revision", description="Commit hash, branch or tag", required=True),
    ),
    T("git_init", "Initialize a new Git repository", _REPO),
    T(
        "git_branch",
        "List Git branches",
        _REPO,
        P(
            "branch_type",
            description="Which branches to list",
            enum=("local", "remote", "all"),
            default="local",
        ),
        P("contains", description="Only branches that contain this commit"),
        P("not_contains", description="Only branches that do not contain this commit"),
    ),
)

# --------------------------------------------------------------------------- github

_OWNER = P("owner", description="Repository owner (username or organization)", required=True)
_GH_REPO = P("repo", description="Repository name", required=True)
_PAGE = P("page", "integer", "Page number for pagination (min 1)")
_PER_PAGE = P("perPage", "integer", "Results per page for pagination (min 1, max 100)")
_PR_NUMBER = P("pullNumber", "integer", "Pull request number", required=True)
_ISSUE_NUMBER = P("issue_number", "integer", "Issue number", required=True)

_GITHUB = S(
    "github",
    "GitHub API: repositories, files, branches, issues, pull requests, reviews, releases and Actions workflows.",
    T(
        "get_me",
        "Get details of the authenticated GitHub user. Use this when a request includes 'me', 'my'. The output will not change unless the user changes their profile, so only call this once.",
    ),
    T(
        "search_repositories",
        "Search for GitHub repositories by name, description, topics, stars or language.",
        P("query", description="Search query using GitHub search syntax", required=True),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "create_repository",
        "Create a new GitHub repository in your account",
        P("name", description="Repository name", required=True),
        P("description", description="Repository description"),
        P("private", "boolean", "Whether the repository should be private", default=False),
        P("autoInit", "boolean", "Initialize with a README", default=False),
    ),
    T(
        "fork_repository",
        "Fork a GitHub repository to your account or specified organization",
        _OWNER,
        _GH_REPO,
        P("organization", description="Organization to fork to; defaults to your account"),
    ),
    T(
        "get_file_contents",
        "Get the contents of a file or directory from a GitHub repository",
        _OWNER,
        _GH_REPO,
        P("path", description="Path to the file or directory", required=True),
        P("branch", description="Branch to get contents from"),
    ),
    T(
        "create_or_update_file",
        "Create or update a single file in a GitHub repository. If updating, you must provide the SHA of the file you want to update.",
        _OWNER,
        _GH_REPO,
        P("path", description="Path where to create/update the file", required=True),
        P("content", description="Content of the file", required=True),
        P("message", description="Commit message", required=True),
        P("branch", description="Branch to create/update the file in", required=True),
        P("sha", description="Blob SHA of the file being replaced (required for updates)"),
    ),
    T(
        "push_files",
        "Push multiple files to a GitHub repository in a single commit",
        _OWNER,
        _GH_REPO,
        P("branch", description="Branch to push to", required=True),
        P(
            "files",
            "array",
            "Files to push, each with 'path' and 'content'",
            required=True,
            items="object",
        ),
        P("message", description="Commit message", required=True),
    ),
    T(
        "create_branch",
        "Create a new branch in a GitHub repository",
        _OWNER,
        _GH_REPO,
        P("branch", description="Name for the new branch", required=True),
        P("from_branch", description="Source branch (defaults to the repository's default branch)"),
    ),
    T("list_branches", "List branches in a GitHub repository", _OWNER, _GH_REPO, _PAGE, _PER_PAGE),
    T(
        "list_commits",
        "Get list of commits of a branch in a GitHub repository. Returns at least 30 results per page by default.",
        _OWNER,
        _GH_REPO,
        P("sha", description="Commit SHA, branch or tag name to list commits of"),
        P("author", description="Author username or email address to filter commits by"),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "create_issue",
        "Create a new issue in a GitHub repository.",
        _OWNER,
        _GH_REPO,
        P("title", description="Issue title", required=True),
        P("body", description="Issue body content"),
        P("assignees", "array", "Usernames to assign to this issue", items="string"),
        P("labels", "array", "Labels to apply to this issue", items="string"),
        P("milestone", "integer", "Milestone number"),
    ),
    T(
        "get_issue",
        "Get details of a specific issue in a GitHub repository.",
        _OWNER,
        _GH_REPO,
        _ISSUE_NUMBER,
    ),
    T(
        "list_issues",
        "List issues in a GitHub repository. For pagination, use the 'page' and 'perPage' parameters.",
        _OWNER,
        _GH_REPO,
        P("state", description="Filter by state", enum=("open", "closed", "all"), default="open"),
        P("labels", "array", "Filter by labels", items="string"),
        P("sort", description="Sort order", enum=("created", "updated", "comments")),
        P("direction", description="Sort direction", enum=("asc", "desc")),
        P("since", description="Only issues updated after this ISO 8601 timestamp"),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "update_issue",
        "Update an existing issue in a GitHub repository: title, body, state, labels, assignees or milestone.",
        _OWNER,
        _GH_REPO,
        _ISSUE_NUMBER,
        P("title", description="New title"),
        P("body", description="New description"),
        P("state", description="New state", enum=("open", "closed")),
        P("labels", "array", "New labels", items="string"),
        P("assignees", "array", "New assignees", items="string"),
    ),
    T(
        "add_issue_comment",
        "Add a comment to a specific issue in a GitHub repository.",
        _OWNER,
        _GH_REPO,
        _ISSUE_NUMBER,
        P("body", description="Comment content", required=True),
    ),
    T(
        "search_issues",
        "Search for issues in GitHub repositories using issues search syntax already scoped to is:issue",
        P("query", description="Search query using GitHub issues search syntax", required=True),
        P("sort", description="Sort field", enum=("comments", "reactions", "created", "updated")),
        P("order", description="Sort order", enum=("asc", "desc")),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "search_code",
        "Fast and precise code search across ALL GitHub repositories using GitHub's native search engine. Best for finding exact symbols, functions, classes, or specific code patterns.",
        P(
            "query",
            description="Search query using GitHub code search syntax, e.g. 'content:Skill language:Java org:github'",
            required=True,
        ),
        P("sort", description="Sort field ('indexed' only)"),
        P("order", description="Sort order", enum=("asc", "desc")),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "search_users",
        "Find GitHub users by username, real name, or other profile information. Useful for locating developers, contributors, or team members.",
        P(
            "query",
            description="User search query, e.g. 'location:seattle followers:>100'",
            required=True,
        ),
        P("sort", description="Sort field", enum=("followers", "repositories", "joined")),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "create_pull_request",
        "Create a new pull request in a GitHub repository.",
        _OWNER,
        _GH_REPO,
        P("title", description="PR title", required=True),
        P("body", description="PR description"),
        P("head", description="Branch containing changes", required=True),
        P("base", description="Branch to merge into", required=True),
        P("draft", "boolean", "Create as draft PR", default=False),
    ),
    T(
        "get_pull_request",
        "Get details of a specific pull request in a GitHub repository.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
    ),
    T(
        "list_pull_requests",
        "List pull requests in a GitHub repository. If the user specifies an author, then DO NOT use this tool and use the search_pull_requests tool instead.",
        _OWNER,
        _GH_REPO,
        P("state", description="Filter by state", enum=("open", "closed", "all"), default="open"),
        P("head", description="Filter by head user/org and branch"),
        P("base", description="Filter by base branch"),
        P("sort", description="Sort by", enum=("created", "updated", "popularity", "long-running")),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "search_pull_requests",
        "Search for pull requests in GitHub repositories using issues search syntax already scoped to is:pr",
        P(
            "query",
            description="Search query using GitHub pull request search syntax, e.g. 'author:octocat is:open'",
            required=True,
        ),
        P("sort", description="Sort field", enum=("comments", "reactions", "created", "updated")),
        P("order", description="Sort order", enum=("asc", "desc")),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "get_pull_request_files",
        "Get the files changed in a specific pull request.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
    ),
    T(
        "get_pull_request_diff",
        "Get the diff of a pull request.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
    ),
    T(
        "get_pull_request_status",
        "Get the status of a specific pull request: the combined state of all status checks on its head commit.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
    ),
    T(
        "get_pull_request_comments",
        "Get comments for a specific pull request.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
    ),
    T(
        "get_pull_request_reviews",
        "Get reviews for a specific pull request.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
    ),
    T(
        "create_pull_request_review",
        "Create a review on a pull request: approve it, request changes, or leave a general comment, optionally with line comments.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
        P(
            "event",
            description="Review action to perform",
            required=True,
            enum=("APPROVE", "REQUEST_CHANGES", "COMMENT"),
        ),
        P("body", description="Review comment text"),
        P("commitId", description="SHA of the commit to review"),
        P(
            "comments",
            "array",
            "Line-specific comments, each with 'path', 'line' and 'body'",
            items="object",
        ),
    ),
    T(
        "merge_pull_request",
        "Merge a pull request in a GitHub repository.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
        P(
            "merge_method",
            description="Merge method",
            enum=("merge", "squash", "rebase"),
            default="merge",
        ),
        P("commit_title", description="Title for the merge commit"),
        P("commit_message", description="Extra detail for the merge commit"),
    ),
    T(
        "update_pull_request_branch",
        "Update the branch of a pull request with the latest changes from the base branch.",
        _OWNER,
        _GH_REPO,
        _PR_NUMBER,
        P("expectedHeadSha", description="The expected SHA of the pull request's HEAD ref"),
    ),
    T("list_releases", "List releases in a GitHub repository", _OWNER, _GH_REPO, _PAGE, _PER_PAGE),
    T("get_latest_release", "Get the latest release in a GitHub repository", _OWNER, _GH_REPO),
    T(
        "create_release",
        "Create a release for a tag in a GitHub repository, optionally generating release notes automatically.",
        _OWNER,
        _GH_REPO,
        P("tag_name", description="Tag for the release", required=True),
        P("name", description="Release title"),
        P("body", description="Release notes in Markdown"),
        P("draft", "boolean", "Create as a draft release", default=False),
        P("prerelease", "boolean", "Mark as a pre-release", default=False),
        P(
            "generate_release_notes",
            "boolean",
            "Auto-generate notes from merged PRs",
            default=False,
        ),
    ),
    T(
        "list_workflow_runs",
        "List workflow runs for a specific workflow in a GitHub repository",
        _OWNER,
        _GH_REPO,
        P("workflow_id", description="The workflow ID or workflow file name", required=True),
        P("branch", description="Filter by branch"),
        P(
            "status",
            description="Filter by run status",
            enum=("queued", "in_progress", "completed", "failure", "success"),
        ),
        _PAGE,
        _PER_PAGE,
    ),
    T(
        "run_workflow",
        "Run an Actions workflow by workflow ID or filename",
        _OWNER,
        _GH_REPO,
        P(
            "workflow_id",
            description="The workflow ID (numeric) or workflow file name (e.g., main.yml)",
            required=True,
        ),
        P("ref", description="The git reference for the workflow (branch or tag)", required=True),
        P("inputs", "object", "Inputs the workflow accepts"),
    ),
    T(
        "get_job_logs",
        "Download logs for a specific workflow job or efficiently get all failed job logs for a workflow run",
        _OWNER,
        _GH_REPO,
        P(
            "job_id",
            "integer",
            "The unique identifier of the workflow job (required for single job logs)",
        ),
        P("run_id", "integer", "Workflow run ID (required when using failed_only)"),
        P(
            "failed_only",
            "boolean",
            "When true, gets logs for all failed jobs in run_id",
            default=False,
        ),
        P(
            "tail_lines",
            "integer",
            "Number of lines to return from the end of the log",
            default=500,
        ),
    ),
    T(
        "rerun_failed_jobs",
        "Re-run only the failed jobs in a workflow run",
        _OWNER,
        _GH_REPO,
        P("run_id", "integer", "The unique identifier of the workflow run", required=True),
    ),
    T(
        "list_notifications",
        "Lists all GitHub notifications for the authenticated user, including unread notifications, mentions, review requests, assignments, and updates on issues or pull requests.",
        P(
            "filter",
            description="Filter notifications",
            enum=("default", "include_read_notifications", "only_participating"),
        ),
        P("since", description="Only notifications updated after this ISO 8601 time"),
        _PAGE,
        _PER_PAGE,
    ),
)

# --------------------------------------------------------------------------- gitlab

_PROJECT_ID = P(
    "project_id", description="Project ID or URL-encoded path (e.g. 'group/project')", required=True
)
_MR_IID = P("merge_request_iid", description="The internal ID of the merge request", required=True)
_ISSUE_IID = P("issue_iid", description="The internal ID of the project issue", required=True)

_GITLAB = S(
    "gitlab",
    "GitLab API: projects, files, branches, issues, merge requests, notes and CI/CD pipelines.",
    T(
        "search_repositories",
        "Search for GitLab projects",
        P("search", description="Search query", required=True),
        P("page", "integer", "Page number for pagination", default=1),
        P("per_page", "integer", "Number of results per page", default=20),
    ),
    T(
        "list_projects",
        "List projects accessible by the current user",
        P("search", description="Filter projects by name"),
        P("owned", "boolean", "Only projects owned by the current user", default=False),
        P("membership", "boolean", "Only projects the user is a member of", default=False),
        P("visibility", description="Filter by visibility", enum=("public", "internal", "private")),
    ),
    T(
        "create_repository",
        "Create a new GitLab project",
        P("name", description="Repository name", required=True),
        P("description", description="Repository description"),
        P(
            "visibility",
            description="Repository visibility level",
            enum=("private", "internal", "public"),
        ),
        P("initialize_with_readme", "boolean", "Initialize with README.md", default=False),
    ),
    T(
        "fork_repository",
        "Fork a GitLab project to your account or specified namespace",
        _PROJECT_ID,
        P("namespace", description="Namespace to fork to (full path)"),
    ),
    T(
        "get_file_contents",
        "Get the contents of a file or directory from a GitLab project",
        _PROJECT_ID,
        P("file_path", description="Path to the file or directory", required=True),
        P("ref", description="Branch, tag or commit to get contents from"),
    ),
    T(
        "create_or_update_file",
        "Create or update a single file in a GitLab project",
        _PROJECT_ID,
        P("file_path", description="Path where to create/update the file", required=True),
        P("content", description="Content of the file", required=True),
        P("commit_message", description="Commit message", required=True),
        P("branch", description="Branch to create/update the file in", required=True),
        P("previous_path", description="Path of the file to move/rename"),
    ),
    T(
        "push_files",
        "Push multiple files to a GitLab project in a single commit",
        _PROJECT_ID,
        P("branch", description="Branch to push to", required=True),
        P(
            "files",
            "array",
            "Files to push, each with 'file_path' and 'content'",
            required=True,
            items="object",
        ),
        P("commit_message", description="Commit message", required=True),
    ),
    T(
        "create_branch",
        "Create a new branch in a GitLab project",
        _PROJECT_ID,
        P("branch", description="Name for the new branch", required=True),
        P("ref", description="Source branch/commit for the new branch"),
    ),
    T(
        "create_issue",
        "Create a new issue in a GitLab project",
        _PROJECT_ID,
        P("title", description="Issue title", required=True),
        P("description", description="Issue description"),
        P("assignee_ids", "array", "Array of user IDs to assign", items="integer"),
        P("labels", "array", "Array of label names", items="string"),
        P("milestone_id", "integer", "Milestone ID to assign"),
    ),
    T(
        "list_issues",
        "List issues in a GitLab project with filtering options",
        _PROJECT_ID,
        P(
            "state",
            description="Return issues with a specific state",
            enum=("opened", "closed", "all"),
        ),
        P("labels", "array", "Array of label names", items="string"),
        P("assignee_username", description="Return issues assigned to the given username"),
        P("search", description="Search issues against their title and description"),
        P(
            "scope",
            description="Return issues from a specific scope",
            enum=("created_by_me", "assigned_to_me", "all"),
        ),
    ),
    T("get_issue", "Get details of a specific issue in a GitLab project", _PROJECT_ID, _ISSUE_IID),
    T(
        "update_issue",
        "Update an issue in a GitLab project",
        _PROJECT_ID,
        _ISSUE_IID,
        P("title", description="The title of the issue"),
        P("description", description="The description of the issue"),
        P("state_event", description="Update issue state", enum=("close", "reopen")),
        P("labels", "array", "Array of label names", items="string"),
        P("assignee_ids", "array", "Array of user IDs to assign", items="integer"),
    ),
    T(
        "create_issue_note",
        "Add a new note (comment) to an issue in a GitLab project",
        _PROJECT_ID,
        _ISSUE_IID,
        P("body", description="The content of the note", required=True),
    ),
    T(
        "create_merge_request",
        "Create a new merge request in a GitLab project",
        _PROJECT_ID,
        P("title", description="Merge request title", required=True),
        P("description", description="Merge request description"),
        P("source_branch", description="Branch containing changes", required=True),
        P("target_branch", description="Branch to merge into", required=True),
        P("draft", "boolean", "Create as draft merge request", default=False),
        P("remove_source_branch", "boolean", "Delete the source branch after merge", default=False),
    ),
    T(
        "list_merge_requests",
        "List merge requests in a GitLab project with filtering options",
        _PROJECT_ID,
        P(
            "state",
            description="Return merge requests with a specific state",
            enum=("opened", "closed", "locked", "merged", "all"),
        ),
        P("target_branch", description="Return merge requests with a specific target branch"),
        P("author_username", description="Return merge requests created by the given username"),
        P(
            "scope",
            description="Return merge requests from a specific scope",
            enum=("created_by_me", "assigned_to_me", "all"),
        ),
    ),
    T("get_merge_request", "Get details of a merge request", _PROJECT_ID, _MR_IID),
    T(
        "get_merge_request_diffs",
        "Get the changes/diffs of a merge request",
        _PROJECT_ID,
        _MR_IID,
        P("view", description="Diff view type", enum=("inline", "parallel")),
    ),
    T(
        "update_merge_request",
        "Update a merge request (title, description, target branch, assignees, labels or state)",
        _PROJECT_ID,
        _MR_IID,
        P("title", description="The title of the merge request"),
        P("description", description="The description of the merge request"),
        P("target_branch", description="The target branch"),
        P("state_event", description="New state", enum=("close", "reopen")),
        P("labels", "array", "Labels for the merge request", items="string"),
    ),
    T(
        "create_merge_request_note",
        "Add a new note (comment) to a merge request",
        _PROJECT_ID,
        _MR_IID,
        P("body", description="The content of the note", required=True),
    ),
    T(
        "list_pipelines",
        "List pipelines in a GitLab project with filtering options",
        _PROJECT_ID,
        P(
            "status",
            description="Filter by status",
            enum=("created", "pending", "running", "success", "failed", "canceled", "skipped"),
        ),
        P("ref", description="Filter by branch or tag"),
        P("per_page", "integer", "Number of items per page", default=20),
    ),
    T(
        "get_pipeline",
        "Get details of a specific pipeline in a GitLab project",
        _PROJECT_ID,
        P("pipeline_id", "integer", "The ID of the pipeline", required=True),
    ),
    T(
        "get_pipeline_job_output",
        "Get the output/trace of a GitLab pipeline job",
        _PROJECT_ID,
        P("job_id", "integer", "The ID of the job", required=True),
    ),
    T(
        "retry_pipeline",
        "Retry a failed or canceled pipeline",
        _PROJECT_ID,
        P("pipeline_id", "integer", "The ID of the pipeline to retry", required=True),
    ),
    T(
        "cancel_pipeline",
        "Cancel a running pipeline",
        _PROJECT_ID,
        P("pipeline_id", "integer", "The ID of the pipeline to cancel", required=True),
    ),
)

# --------------------------------------------------------------------------- jira

_JIRA_KEY = P("issue_key", description="Jira issue key (e.g. 'PROJ-123')", required=True)

_JIRA = S(
    "jira",
    "Atlassian Jira: issues, JQL search, transitions, comments, worklogs, epics, boards and sprints.",
    T(
        "jira_get_issue",
        "Get details of a specific Jira issue including its Epic links and relationship information.",
        _JIRA_KEY,
        P(
            "fields",
            description="Comma-separated list of fields to return, or '*all'",
            default="*all",
        ),
        P("expand", description="Fields to expand, e.g. 'renderedFields', 'changelog'"),
        P("comment_limit", "integer", "Maximum number of comments to include", default=10),
    ),
    T(
        "jira_search",
        "Search Jira issues using JQL (Jira Query Language).",
        P(
            "jql",
            description="JQL query string, e.g. 'project = PROJ AND status = \"In Progress\"'",
            required=True,
        ),
        P("fields", description="Comma-separated fields to return"),
        P("limit", "integer", "Maximum number of results (1-50)", default=10),
        P("start_at", "integer", "Starting index for pagination", default=0),
    ),
    T(
        "jira_get_project_issues",
        "Get all issues for a specific Jira project",
        P("project_key", description="The project key", required=True),
        P("limit", "integer", "Maximum number of results (1-50)", default=10),
    ),
    T(
        "jira_get_all_projects",
        "Get all Jira projects accessible to the current user.",
        P("include_archived", "boolean", "Whether to include archived projects", default=False),
    ),
    T(
        "jira_create_issue",
        "Create a new Jira issue with optional Epic link or parent for subtasks.",
        P("project_key", description="The JIRA project key (e.g. 'PROJ', 'DEV')", required=True),
        P("summary", description="Summary/title of the issue", required=True),
        P(
            "issue_type",
            description="Issue type (e.g. 'Task', 'Bug', 'Story', 'Epic', 'Subtask')",
            required=True,
        ),
        P(
            "assignee",
            description="Assignee's user identifier (email, display name, or account ID)",
        ),
        P("description", description="Issue description"),
        P("components", description="Comma-separated list of component names"),
        P(
            "additional_fields",
            "object",
            "Extra fields such as priority, labels, parent or custom fields",
        ),
    ),
    T(
        "jira_batch_create_issues",
        "Create multiple Jira issues in a batch.",
        P(
            "issues",
            "array",
            "Issue objects, each with project_key, summary and issue_type",
            required=True,
            items="object",
        ),
        P(
            "validate_only",
            "boolean",
            "If true, only validates the issues without creating them",
            default=False,
        ),
    ),
    T(
        "jira_update_issue",
        "Update an existing Jira issue including changing status, adding Epic links, updating fields, etc.",
        _JIRA_KEY,
        P(
            "fields",
            "object",
            "Fields to update, e.g. {'summary': 'New title', 'assignee': 'user@example.com'}",
            required=True,
        ),
        P("additional_fields", "object", "Optional extra fields to update"),
    ),
    T("jira_delete_issue", "Delete an existing Jira issue.", _JIRA_KEY),
    T(
        "jira_add_comment",
        "Add a comment to a Jira issue.",
        _JIRA_KEY,
        P("comment", description="Comment text in Markdown format", required=True),
    ),
    T(
        "jira_get_transitions",
        "Get available status transitions for a Jira issue.",
        _JIRA_KEY,
    ),
    T(
        "jira_transition_issue",
        "Transition a Jira issue to a new status.",
        _JIRA_KEY,
        P(
            "transition_id",
            description="ID of the transition to perform (use jira_get_transitions to find it)",
            required=True,
        ),
        P("fields", "object", "Fields to update during the transition, e.g. resolution"),
        P("comment", description="Comment to add during the transition"),
    ),
    T(
        "jira_add_worklog",
        "Add a worklog entry to a Jira issue.",
        _JIRA_KEY,
        P(
            "time_spent",
            description="Time spent in Jira format, e.g. '1h 30m', '1d'",
            required=True,
        ),
        P("comment", description="Optional comment for the worklog"),
        P("started", description="Start time in ISO format; defaults to now"),
    ),
    T("jira_get_worklog", "Get worklog entries for a Jira issue.", _JIRA_KEY),
    T(
        "jira_link_to_epic",
        "Link an existing issue to an epic.",
        _JIRA_KEY,
        P(
            "epic_key",
            description="The key of the epic to link to (e.g. 'PROJ-456')",
            required=True,
        ),
    ),
    T(
        "jira_create_issue_link",
        "Create a link between two Jira issues, e.g. 'Blocks', 'Duplicate', 'Relates to'.",
        P("link_type", description="The type of link to create", required=True),
        P("inward_issue_key", description="The key of the inward issue", required=True),
        P("outward_issue_key", description="The key of the outward issue", required=True),
    ),
    T(
        "jira_get_agile_boards",
        "Get Jira agile boards by name, project key, or type.",
        P("board_name", description="Board name (fuzzy search)"),
        P("project_key", description="Jira project key"),
        P("board_type", description="Type of the board", enum=("scrum", "kanban")),
    ),
    T(
        "jira_get_sprints_from_board",
        "Get Jira sprints from a board by state.",
        P("board_id", description="The ID of the board", required=True),
        P("state", description="Sprint state", enum=("active", "future", "closed")),
    ),
    T(
        "jira_get_sprint_issues",
        "Get Jira issues from a sprint.",
        P("sprint_id", description="The ID of the sprint", required=True),
        P("fields", description="Comma-separated fields to return"),
    ),
    T(
        "jira_create_sprint",
        "Create a Jira sprint for a board.",
        P("board_id", description="The ID of the board", required=True),
        P("sprint_name", description="Name of the sprint", required=True),
        P("start_date", description="Start time (ISO 8601)", required=True),
        P("end_date", description="End time (ISO 8601)", required=True),
        P("goal", description="Goal of the sprint"),
    ),
    T(
        "jira_get_user_profile",
        "Retrieve profile information for a specific Jira user.",
        P(
            "user_identifier",
            description="Email address, username, account ID or key",
            required=True,
        ),
    ),
)

# --------------------------------------------------------------------------- linear

_LINEAR = S(
    "linear",
    "Linear issue tracking: issues, comments, teams, projects, cycles and workflow states.",
    T(
        "createIssue",
        "Creates a new Linear issue with the specified details.",
        P("title", description="The title of the issue", required=True),
        P("teamId", description="The ID of the team this issue belongs to", required=True),
        P("description", description="Markdown description of the issue"),
        P("priority", "integer", "Priority: 0 = none, 1 = urgent, 2 = high, 3 = medium, 4 = low"),
        P("assigneeId", description="ID of the user to assign"),
        P("labelIds", "array", "Label IDs to apply", items="string"),
        P("projectId", description="Project to add the issue to"),
    ),
    T(
        "updateIssue",
        "Updates an existing Linear issue: title, description, state, priority, assignee or estimate.",
        P("id", description="Issue ID or identifier, e.g. 'ENG-123'", required=True),
        P("title", description="New title"),
        P("description", description="New description"),
        P("stateId", description="ID of the new workflow state"),
        P("priority", "integer", "New priority (0-4)"),
        P("assigneeId", description="ID of the new assignee"),
    ),
    T(
        "getIssue",
        "Retrieves a Linear issue by ID or identifier, including its comments, attachments and state.",
        P("id", description="Issue ID or identifier, e.g. 'ENG-123'", required=True),
    ),
    T(
        "searchIssues",
        "Searches Linear issues using flexible criteria: free text, team, status, assignee, labels or priority.",
        P("query", description="Optional text to search in title and description"),
        P("teamId", description="Filter by team ID"),
        P("status", description="Filter by status name (e.g. 'In Progress')"),
        P("assigneeId", description="Filter by assignee ID"),
        P("labels", "array", "Filter by label names", items="string"),
        P("limit", "integer", "Max results to return", default=10),
    ),
    T(
        "listMyIssues",
        "Lists issues assigned to the authenticated user, optionally filtered by status.",
        P("status", description="Filter by status name"),
        P("limit", "integer", "Max results to return", default=25),
    ),
    T(
        "addComment",
        "Adds a comment to an existing Linear issue.",
        P("issueId", description="ID of the issue to comment on", required=True),
        P("body", description="Comment text in markdown format", required=True),
    ),
    T("listTeams", "Lists all teams in the Linear workspace with their IDs and keys."),
    T(
        "listProjects",
        "Lists Linear projects, optionally filtered by team.",
        P("teamId", description="Filter by team ID"),
        P("includeArchived", "boolean", "Include archived projects", default=False),
    ),
    T(
        "listCycles",
        "Lists cycles (sprints) for a Linear team, including the current active cycle.",
        P("teamId", description="ID of the team", required=True),
        P(
            "type",
            description="Which cycles to return",
            enum=("current", "previous", "next", "all"),
            default="all",
        ),
    ),
    T(
        "listWorkflowStates",
        "Lists the workflow states (Backlog, Todo, In Progress, Done, Canceled...) of a team.",
        P("teamId", description="ID of the team", required=True),
    ),
    T("getViewer", "Gets information about the currently authenticated Linear user."),
)

# --------------------------------------------------------------------------- google calendar

_CAL_ID = P(
    "calendarId",
    description="ID of the calendar (use 'primary' for the main calendar)",
    default="primary",
)

_GCAL = S(
    "gcal",
    "Google Calendar: calendars, events, invitations and free/busy availability.",
    T(
        "list-calendars",
        "List all available calendars",
    ),
    T(
        "list-events",
        "List events from one or more calendars. Supports time range filtering.",
        _CAL_ID,
        P("timeMin", description="Start time boundary, ISO 8601 (e.g. 2024-01-01T00:00:00)"),
        P("timeMax", description="End time boundary, ISO 8601"),
        P("timeZone", description="IANA timezone for the query, e.g. 'America/Los_Angeles'"),
    ),
    T(
        "search-events",
        "Search for events in a calendar by text query.",
        _CAL_ID,
        P(
            "query",
            description="Free text search query (searches summary, description, location, attendees)",
            required=True,
        ),
        P("timeMin", description="Start time boundary, ISO 8601"),
        P("timeMax", description="End time boundary, ISO 8601"),
    ),
    T(
        "get-event",
        "Get details of a specific event by ID.",
        _CAL_ID,
        P("eventId", description="ID of the event", required=True),
    ),
    T(
        "create-event",
        "Create a new calendar event. Supports attendees, reminders, recurrence and Google Meet conferencing.",
        _CAL_ID,
        P("summary", description="Title of the event", required=True),
        P("start", description="Event start time, ISO 8601", required=True),
        P("end", description="Event end time, ISO 8601", required=True),
        P("description", description="Description/notes for the event"),
        P("location", description="Location of the event"),
        P("attendees", "array", "Email addresses of attendees", items="string"),
        P("timeZone", description="IANA timezone of the event"),
        P("recurrence", "array", "RRULE strings for recurring events", items="string"),
    ),
    T(
        "update-event",
        "Update an existing calendar event with recurring event modification scope support.",
        _CAL_ID,
        P("eventId", description="ID of the event to update", required=True),
        P("summary", description="New title"),
        P("start", description="New start time, ISO 8601"),
        P("end", description="New end time, ISO 8601"),
        P("attendees", "array", "New list of attendee emails", items="string"),
        P(
            "modificationScope",
            description="Scope for recurring events",
            enum=("thisEventOnly", "thisAndFollowing", "all"),
            default="all",
        ),
    ),
    T(
        "delete-event",
        "Delete a calendar event.",
        _CAL_ID,
        P("eventId", description="ID of the event to delete", required=True),
        P(
            "sendUpdates",
            description="Whether to notify attendees",
            enum=("all", "externalOnly", "none"),
            default="all",
        ),
    ),
    T(
        "respond-to-event",
        "Respond to a calendar event invitation with Accept, Decline, Maybe (Tentative).",
        _CAL_ID,
        P("eventId", description="ID of the event", required=True),
        P(
            "response",
            description="Your response",
            required=True,
            enum=("accepted", "declined", "tentative"),
        ),
        P("comment", description="Optional note to the organizer"),
    ),
    T(
        "get-freebusy",
        "Query free/busy information for calendars. Note: Time range is limited to a maximum of 3 months between timeMin and timeMax.",
        P("calendars", "array", "Calendar IDs to check", required=True, items="string"),
        P("timeMin", description="Start of the interval, ISO 8601", required=True),
        P("timeMax", description="End of the interval, ISO 8601", required=True),
        P("timeZone", description="Timezone for the response"),
    ),
    T("list-colors", "List available color IDs and their meanings for calendar events"),
    T(
        "get-current-time",
        "Get the current date and time. Call this FIRST before creating, updating, or searching for events to ensure you have accurate date context for scheduling.",
        P(
            "timeZone",
            description="Optional IANA timezone; defaults to the primary calendar's timezone",
        ),
    ),
)

# --------------------------------------------------------------------------- gmail

_MSG_ID = P("messageId", description="ID of the email message", required=True)

_GMAIL = S(
    "gmail",
    "Gmail: send, draft, read, search and organise email with labels and filters, and download attachments.",
    T(
        "send_email",
        "Sends a new email",
        P("to", "array", "List of recipient email addresses", required=True, items="string"),
        P("subject", description="Email subject", required=True),
        P(
            "body",
            description="Email body content (plain text, or fallback when htmlBody is given)",
            required=True,
        ),
        P("htmlBody", description="HTML version of the email body"),
        P(
            "mimeType",
            description="Email content type",
            enum=("text/plain", "text/html", "multipart/alternative"),
            default="text/plain",
        ),
        P("cc", "array", "List of CC recipients", items="string"),
        P("bcc", "array", "List of BCC recipients", items="string"),
        P("attachments", "array", "Local file paths to attach", items="string"),
    ),
    T(
        "draft_email",
        "Draft a new email",
        P("to", "array", "List of recipient email addresses", required=True, items="string"),
        P("subject", description="Email subject", required=True),
        P("body", description="Email body content", required=True),
        P("cc", "array", "List of CC recipients", items="string"),
        P("bcc", "array", "List of BCC recipients", items="string"),
    ),
    T(
        "reply_email",
        "Reply to an existing email. The reply is sent in the same thread with the correct In-Reply-To and References headers.",
        _MSG_ID,
        P("body", description="Reply body", required=True),
        P("replyAll", "boolean", "Reply to all recipients", default=False),
    ),
    T("read_email", "Retrieves the content of a specific email", _MSG_ID),
    T(
        "search_emails",
        "Searches for emails using Gmail search syntax",
        P(
            "query",
            description="Gmail search query (e.g., 'from:example@gmail.com has:attachment')",
            required=True,
        ),
        P("maxResults", "integer", "Maximum number of results to return", default=10),
    ),
    T(
        "modify_email",
        "Modifies email labels (move to different folders)",
        _MSG_ID,
        P("addLabelIds", "array", "List of label IDs to add to the message", items="string"),
        P(
            "removeLabelIds",
            "array",
            "List of label IDs to remove from the message",
            items="string",
        ),
    ),
    T(
        "archive_email",
        "Archive an email by removing it from the inbox. The message stays searchable under All Mail.",
        _MSG_ID,
    ),
    T("delete_email", "Permanently deletes an email", _MSG_ID),
    T(
        "batch_modify_emails",
        "Modifies labels for multiple emails in batches",
        P("messageIds", "array", "List of message IDs to modify", required=True, items="string"),
        P("addLabelIds", "array", "Label IDs to add to all messages", items="string"),
        P("removeLabelIds", "array", "Label IDs to remove from all messages", items="string"),
        P("batchSize", "integer", "Number of messages to process in each batch", default=50),
    ),
    T(
        "batch_delete_emails",
        "Permanently deletes multiple emails in batches",
        P("messageIds", "array", "List of message IDs to delete", required=True, items="string"),
        P("batchSize", "integer", "Number of messages to process in each batch", default=50),
    ),
    T("list_email_labels", "Retrieves all available Gmail labels"),
    T(
        "create_label",
        "Creates a new Gmail label",
        P("name", description="Name for the new label", required=True),
        P(
            "messageListVisibility",
            description="Whether to show or hide the label in the message list",
            enum=("show", "hide"),
        ),
        P(
            "labelListVisibility",
            description="Visibility of the label in the label list",
            enum=("labelShow", "labelShowIfUnread", "labelHide"),
        ),
    ),
    T(
        "update_label",
        "Updates an existing Gmail label",
        P("id", description="ID of the label to update", required=True),
        P("name", description="New name for the label"),
    ),
    T(
        "delete_label",
        "Deletes a Gmail label",
        P("id", description="ID of the label to delete", required=True),
    ),
    T(
        "get_or_create_label",
        "Gets an existing label by name or creates it if it doesn't exist",
        P("name", description="Name of the label to get or create", required=True),
    ),
    T(
        "create_filter",
        "Creates a new Gmail filter with custom criteria and actions",
        P(
            "criteria",
            "object",
            "Match criteria: from, to, subject, query, hasAttachment, size...",
            required=True,
        ),
        P("action", "object", "Actions: addLabelIds, removeLabelIds, forward", required=True),
    ),
    T("list_filters", "Retrieves all Gmail filters"),
    T(
        "download_attachment",
        "Downloads an email attachment to a specified location",
        _MSG_ID,
        P("attachmentId", description="ID of the attachment to download", required=True),
        P(
            "savePath",
            description="Directory to save the attachment to; defaults to the current directory",
        ),
        P("filename", description="Filename to save as; defaults to the original name"),
    ),
)

# --------------------------------------------------------------------------- slack

_CHANNEL = P("channel_id", description="The ID of the channel", required=True)

_SLACK = S(
    "slack",
    "Slack workspace: channels, messages, threads, reactions, users and files.",
    T(
        "slack_list_channels",
        "List public or pre-defined channels in the workspace with pagination",
        P(
            "limit",
            "integer",
            "Maximum number of channels to return (default 100, max 200)",
            default=100,
        ),
        P("cursor", description="Pagination cursor for next page of results"),
    ),
    T(
        "slack_post_message",
        "Post a new message to a Slack channel",
        P("channel_id", description="The ID of the channel to post to", required=True),
        P("text", description="The message text to post", required=True),
    ),
    T(
        "slack_reply_to_thread",
        "Reply to a specific message thread in Slack",
        P("channel_id", description="The ID of the channel containing the thread", required=True),
        P(
            "thread_ts",
            description="The timestamp of the parent message in the format '1234567890.123456'",
            required=True,
        ),
        P("text", description="The reply text", required=True),
    ),
    T(
        "slack_add_reaction",
        "Add a reaction emoji to a message",
        _CHANNEL,
        P("timestamp", description="The timestamp of the message to react to", required=True),
        P("reaction", description="The name of the emoji reaction (without ::)", required=True),
    ),
    T(
        "slack_get_channel_history",
        "Get recent messages from a channel",
        _CHANNEL,
        P("limit", "integer", "Number of messages to retrieve", default=10),
    ),
    T(
        "slack_get_thread_replies",
        "Get all replies in a message thread",
        _CHANNEL,
        P("thread_ts", description="The timestamp of the parent message", required=True),
    ),
    T(
        "slack_get_users",
        "Get a list of all users in the workspace with their basic profile information",
        P("cursor", description="Pagination cursor for next page of results"),
        P(
            "limit",
            "integer",
            "Maximum number of users to return (default 100, max 200)",
            default=100,
        ),
    ),
    T(
        "slack_get_user_profile",
        "Get detailed profile information for a specific user",
        P("user_id", description="The ID of the user", required=True),
    ),
    T(
        "slack_search_messages",
        "Search messages across the workspace using Slack search modifiers (in:#channel, from:@user, before:, after:).",
        P("query", description="Search query", required=True),
        P("count", "integer", "Number of results", default=20),
        P("sort", description="Sort order", enum=("score", "timestamp"), default="score"),
    ),
    T(
        "slack_create_channel",
        "Create a new public or private channel",
        P("name", description="Channel name (lowercase, no spaces)", required=True),
        P("is_private", "boolean", "Create a private channel", default=False),
    ),
    T(
        "slack_invite_to_channel",
        "Invite one or more users to a channel",
        _CHANNEL,
        P("user_ids", "array", "IDs of users to invite", required=True, items="string"),
    ),
    T(
        "slack_set_channel_topic",
        "Set the topic of a channel",
        _CHANNEL,
        P("topic", description="New topic text", required=True),
    ),
    T(
        "slack_upload_file",
        "Upload a file or text snippet and share it in a channel",
        _CHANNEL,
        P("file_path", description="Local path of the file to upload"),
        P("content", description="Text content to upload as a snippet instead of a file"),
        P("filename", description="Name of the file"),
        P("initial_comment", description="Message to post with the file"),
    ),
    T(
        "slack_schedule_message",
        "Schedule a message to be posted to a channel at a future time",
        _CHANNEL,
        P("text", description="The message text", required=True),
        P("post_at", "integer", "Unix timestamp when the message should be sent", required=True),
    ),
)

# --------------------------------------------------------------------------- postgres

_POSTGRES = S(
    "postgres",
    "PostgreSQL database access with schema inspection, query plans, index tuning and health checks.",
    T(
        "query",
        "Run a read-only SQL query",
        P("sql", description="The SQL query to run", required=True),
    ),
    T(
        "execute_sql",
        "Execute any SQL query. In restricted mode only read-only statements are allowed.",
        P("sql", description="SQL to run", required=True),
    ),
    T("list_schemas", "List all schemas in the database"),
    T(
        "list_objects",
        "List objects in a schema",
        P("schema_name", description="Schema name", required=True),
        P(
            "object_type",
            description="Object type",
            enum=("table", "view", "sequence", "extension"),
            default="table",
        ),
    ),
    T(
        "get_object_details",
        "Show detailed information about a database object: columns and data types, constraints and indexes.",
        P("schema_name", description="Schema name", required=True),
        P("object_name", description="Object name", required=True),
        P(
            "object_type",
            description="Object type",
            enum=("table", "view", "sequence", "extension"),
            default="table",
        ),
    ),
    T(
        "explain_query",
        "Explains the execution plan for a SQL query, showing how the database will execute it and provides detailed cost estimates.",
        P("sql", description="SQL query to explain", required=True),
        P(
            "analyze",
            "boolean",
            "When True, actually runs the query to show real execution statistics",
            default=False,
        ),
        P(
            "hypothetical_indexes",
            "array",
            "Hypothetical indexes to simulate, each with 'table' and 'columns'",
            items="object",
        ),
    ),
    T(
        "analyze_workload_indexes",
        "Analyze frequently executed queries in the database and recommend optimal indexes",
        P("max_index_size_mb", "integer", "Max index size in MB", default=10000),
        P("method", description="Method to use for analysis", enum=("dta", "llm"), default="dta"),
    ),
    T(
        "analyze_query_indexes",
        "Analyze a list of (up to 10) SQL queries and recommend optimal indexes",
        P("queries", "array", "List of query strings to analyze", required=True, items="string"),
        P("max_index_size_mb", "integer", "Max index size in MB", default=10000),
    ),
    T(
        "analyze_db_health",
        "Analyzes database health. Here are the available health checks: index - invalid, duplicate, and bloated indexes; connection - connection count and utilization; vacuum - vacuum health for transaction id wraparound; sequence - sequences at risk of exceeding their maximum value; replication - replication lag; buffer - buffer cache hit rates; constraint - invalid constraints; all - runs all checks.",
        P(
            "health_type",
            description="Comma-separated list of health checks to perform",
            default="all",
        ),
    ),
    T(
        "get_top_queries",
        "Reports the slowest or most resource-intensive queries using data from the 'pg_stat_statements' extension.",
        P(
            "sort_by",
            description="Ranking criteria",
            enum=("total_time", "mean_time", "resources"),
            default="resources",
        ),
        P("limit", "integer", "Number of queries to return", default=10),
    ),
)

# --------------------------------------------------------------------------- sqlite

_SQLITE = S(
    "sqlite",
    "SQLite database operations and business intelligence memo on a local database file.",
    T(
        "read_query",
        "Execute a SELECT query on the SQLite database",
        P("query", description="SELECT SQL query to execute", required=True),
    ),
    T(
        "write_query",
        "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
        P("query", description="SQL query to execute", required=True),
    ),
    T(
        "create_table",
        "Create a new table in the SQLite database",
        P("query", description="CREATE TABLE SQL statement", required=True),
    ),
    T("list_tables", "List all tables in the SQLite database"),
    T(
        "describe_table",
        "Get the schema information for a specific table",
        P("table_name", description="Name of the table to describe", required=True),
    ),
    T(
        "append_insight",
        "Add a business insight to the memo",
        P("insight", description="Business insight discovered from data analysis", required=True),
    ),
)

# --------------------------------------------------------------------------- mongodb

_DB = P("database", description="Database name", required=True)
_COLL = P("collection", description="Collection name", required=True)

_MONGODB = S(
    "mongodb",
    "MongoDB: query, aggregate and modify documents, and manage databases, collections and indexes.",
    T(
        "connect",
        "Connect to a MongoDB instance using a connection string.",
        P(
            "connectionString",
            description="MongoDB connection string (mongodb:// or mongodb+srv://)",
            required=True,
        ),
    ),
    T(
        "find",
        "Run a find query against a MongoDB collection",
        _DB,
        _COLL,
        P(
            "filter",
            "object",
            "The query filter, matching the syntax of the query argument of db.collection.find()",
        ),
        P("projection", "object", "The projection, matching the syntax of db.collection.find()"),
        P("sort", "object", 'A document describing the sort order, e.g. {"createdAt": -1}'),
        P("limit", "integer", "The maximum number of documents to return", default=10),
    ),
    T(
        "aggregate",
        "Run an aggregation against a MongoDB collection",
        _DB,
        _COLL,
        P(
            "pipeline",
            "array",
            "An array of aggregation stages to execute",
            required=True,
            items="object",
        ),
    ),
    T(
        "count",
        "Gets the number of documents in a MongoDB collection using db.collection.count() and query as an optional filter parameter",
        _DB,
        _COLL,
        P(
            "query",
            "object",
            "A filter/query parameter. Allows users to filter the documents to count.",
        ),
    ),
    T(
        "insert-many",
        "Insert an array of documents into a MongoDB collection",
        _DB,
        _COLL,
        P("documents", "array", "The array of documents to insert", required=True, items="object"),
    ),
    T(
        "update-many",
        "Updates all documents that match the specified filter for a collection",
        _DB,
        _COLL,
        P("filter", "object", "The selection criteria for the update"),
        P(
            "update",
            "object",
            "An update document describing the modifications to apply",
            required=True,
        ),
        P(
            "upsert",
            "boolean",
            "Insert a new document if no documents match the filter",
            default=False,
        ),
    ),
    T(
        "delete-many",
        "Removes all documents that match the filter from a MongoDB collection",
        _DB,
        _COLL,
        P("filter", "object", "The query filter specifying which documents to delete"),
    ),
    T("list-databases", "List all databases for a MongoDB connection"),
    T("list-collections", "List all collections for a given database", _DB),
    T(
        "collection-schema",
        "Describe the schema for a collection by sampling its documents",
        _DB,
        _COLL,
        P("sampleSize", "integer", "Number of documents to sample", default=50),
    ),
    T("collection-indexes", "Describe the indexes for a collection", _DB, _COLL),
    T(
        "create-index",
        "Create an index for a collection",
        _DB,
        _COLL,
        P("keys", "object", 'The index definition, e.g. {"email": 1}', required=True),
        P("name", description="The name of the index"),
        P("unique", "boolean", "Create a unique index", default=False),
    ),
    T(
        "explain",
        "Returns statistics describing the execution of the winning plan chosen by the query optimizer for the evaluated method",
        _DB,
        _COLL,
        P(
            "method",
            "object",
            'The method and its arguments to run, e.g. {"name": "find", "arguments": {...}}',
            required=True,
        ),
        P(
            "verbosity",
            description="Verbosity mode",
            enum=("queryPlanner", "executionStats", "allPlansExecution"),
            default="queryPlanner",
        ),
    ),
    T(
        "create-collection",
        "Creates a new collection in a database. If the database doesn't exist, it will be created automatically.",
        _DB,
        _COLL,
    ),
    T(
        "drop-collection",
        "Removes a collection or view from the database. The method also removes any indexes associated with the dropped collection.",
        _DB,
        _COLL,
    ),
    T(
        "rename-collection",
        "Renames a collection in a MongoDB database",
        _DB,
        _COLL,
        P("newName", description="The new name for the collection", required=True),
        P(
            "dropTarget",
            "boolean",
            "If true, drops the target collection if it exists",
            default=False,
        ),
    ),
    T("drop-database", "Removes the specified database, deleting the associated data files", _DB),
    T("db-stats", "Returns statistics that reflect the use state of a single database", _DB),
    T("collection-storage-size", "Gets the size of the collection", _DB, _COLL),
)

# --------------------------------------------------------------------------- playwright

_ELEMENT = P(
    "element",
    description="Human-readable element description used to obtain permission to interact with the element",
    required=True,
)
_REF = P("ref", description="Exact target element reference from the page snapshot", required=True)

_PLAYWRIGHT = S(
    "playwright",
    "Browser automation with Playwright using structured accessibility snapshots.",
    T(
        "browser_navigate",
        "Navigate to a URL",
        P("url", description="The URL to navigate to", required=True),
    ),
    T("browser_navigate_back", "Go back to the previous page"),
    T(
        "browser_snapshot",
        "Capture accessibility snapshot of the current page, this is better than screenshot",
    ),
    T(
        "browser_take_screenshot",
        "Take a screenshot of the current page. You can't perform actions based on the screenshot, use browser_snapshot for actions.",
        P(
            "type",
            description="Image format for the screenshot",
            enum=("png", "jpeg"),
            default="png",
        ),
        P("filename", description="File name to save the screenshot to"),
        P(
            "element",
            description="Human-readable element description to screenshot just that element",
        ),
        P("ref", description="Exact target element reference from the page snapshot"),
        P("fullPage", "boolean", "Take a screenshot of the full scrollable page", default=False),
    ),
    T(
        "browser_click",
        "Perform click on a web page",
        _ELEMENT,
        _REF,
        P(
            "doubleClick",
            "boolean",
            "Whether to perform a double click instead of a single click",
            default=False,
        ),
        P(
            "button",
            description="Button to click",
            enum=("left", "right", "middle"),
            default="left",
        ),
    ),
    T(
        "browser_type",
        "Type text into editable element",
        _ELEMENT,
        _REF,
        P("text", description="Text to type into the element", required=True),
        P("submit", "boolean", "Whether to submit entered text (press Enter after)", default=False),
        P("slowly", "boolean", "Whether to type one character at a time", default=False),
    ),
    T(
        "browser_fill_form",
        "Fill multiple form fields",
        P(
            "fields",
            "array",
            "Fields to fill in, each with name, type, ref and value",
            required=True,
            items="object",
        ),
    ),
    T(
        "browser_select_option",
        "Select an option in a dropdown",
        _ELEMENT,
        _REF,
        P(
            "values",
            "array",
            "Array of values to select in the dropdown",
            required=True,
            items="string",
        ),
    ),
    T("browser_hover", "Hover over element on page", _ELEMENT, _REF),
    T(
        "browser_drag",
        "Perform drag and drop between two elements",
        P("startElement", description="Human-readable source element description", required=True),
        P(
            "startRef",
            description="Exact source element reference from the page snapshot",
            required=True,
        ),
        P("endElement", description="Human-readable target element description", required=True),
        P(
            "endRef",
            description="Exact target element reference from the page snapshot",
            required=True,
        ),
    ),
    T(
        "browser_press_key",
        "Press a key on the keyboard",
        P(
            "key",
            description="Name of the key to press or a character to generate, such as `ArrowLeft` or `a`",
            required=True,
        ),
    ),
    T(
        "browser_evaluate",
        "Evaluate JavaScript expression on page or element",
        P(
            "function",
            description="() => { /* code */ } or (element) => { /* code */ } when element is provided",
            required=True,
        ),
        P("element", description="Human-readable element description"),
        P("ref", description="Exact target element reference from the page snapshot"),
    ),
    T(
        "browser_wait_for",
        "Wait for text to appear or disappear or a specified time to pass",
        P("time", "number", "The time to wait in seconds"),
        P("text", description="The text to wait for"),
        P("textGone", description="The text to wait for to disappear"),
    ),
    T(
        "browser_tabs",
        "List, create, close, or select a browser tab.",
        P(
            "action",
            description="Operation to perform",
            required=True,
            enum=("list", "new", "close", "select"),
        ),
        P(
            "index",
            "integer",
            "Tab index, used for close/select. If omitted for close, current tab is closed.",
        ),
    ),
    T(
        "browser_console_messages",
        "Returns all console messages",
        P("onlyErrors", "boolean", "Only return error messages", default=False),
    ),
    T("browser_network_requests", "Returns all network requests since loading the page"),
    T(
        "browser_file_upload",
        "Upload one or multiple files",
        P(
            "paths",
            "array",
            "The absolute paths to the files to upload. If omitted, file chooser is cancelled.",
            items="string",
        ),
    ),
    T(
        "browser_handle_dialog",
        "Handle a dialog",
        P("accept", "boolean", "Whether to accept the dialog.", required=True),
        P("promptText", description="The text of the prompt in case of a prompt dialog."),
    ),
    T(
        "browser_resize",
        "Resize the browser window",
        P("width", "number", "Width of the browser window", required=True),
        P("height", "number", "Height of the browser window", required=True),
    ),
    T(
        "browser_pdf_save",
        "Save page as PDF",
        P(
            "filename",
            description="File name to save the pdf to. Defaults to `page-{timestamp}.pdf` if not specified.",
        ),
    ),
    T("browser_close", "Close the page"),
    T(
        "browser_install",
        "Install the browser specified in the config. Call this if you get an error about the browser not being installed.",
    ),
)

# --------------------------------------------------------------------------- puppeteer

_SELECTOR = P("selector", description="CSS selector for the element", required=True)

_PUPPETEER = S(
    "puppeteer",
    "Browser automation with Puppeteer: navigate pages, take screenshots, interact with elements and run JavaScript.",
    T(
        "puppeteer_navigate",
        "Navigate to a URL",
        P("url", description="URL to navigate to", required=True),
        P("launchOptions", "object", "PuppeteerJS LaunchOptions; if changed, the browser restarts"),
        P(
            "allowDangerous",
            "boolean",
            "Allow dangerous LaunchOptions that reduce security",
            default=False,
        ),
    ),
    T(
        "puppeteer_screenshot",
        "Take a screenshot of the current page or a specific element",
        P("name", description="Name for the screenshot", required=True),
        P("selector", description="CSS selector for element to screenshot"),
        P("width", "number", "Width in pixels", default=800),
        P("height", "number", "Height in pixels", default=600),
        P(
            "encoded",
            "boolean",
            "Return a base64 data URI instead of binary image content",
            default=False,
        ),
    ),
    T("puppeteer_click", "Click an element on the page", _SELECTOR),
    T(
        "puppeteer_fill",
        "Fill out an input field",
        P("selector", description="CSS selector for input field", required=True),
        P("value", description="Value to fill", required=True),
    ),
    T(
        "puppeteer_select",
        "Select an element on the page with Select tag",
        P("selector", description="CSS selector for element to select", required=True),
        P("value", description="Value to select", required=True),
    ),
    T("puppeteer_hover", "Hover an element on the page", _SELECTOR),
    T(
        "puppeteer_evaluate",
        "Execute JavaScript in the browser console",
        P("script", description="JavaScript code to execute", required=True),
    ),
)

# --------------------------------------------------------------------------- fetch

_FETCH = S(
    "fetch",
    "Web content fetching: retrieves a URL and converts HTML to markdown for easier consumption.",
    T(
        "fetch",
        "Fetches a URL from the internet and optionally extracts its contents as markdown. Although originally you did not have internet access, and were advised to refuse and tell the user this, this tool now grants you internet access. Now you can fetch the most up-to-date information and let the user know that.",
        P("url", description="URL to fetch", required=True),
        P("max_length", "integer", "Maximum number of characters to return.", default=5000),
        P(
            "start_index",
            "integer",
            "On return output starting at this character index, useful if a previous fetch was truncated and more context is required.",
            default=0,
        ),
        P(
            "raw",
            "boolean",
            "Get the actual HTML content of the requested page, without simplification.",
            default=False,
        ),
    ),
)

# --------------------------------------------------------------------------- brave search

_BRAVE = S(
    "brave",
    "Brave Search API: web, local business, news, image and video search, plus AI summaries.",
    T(
        "brave_web_search",
        "Performs a web search using the Brave Search API, ideal for general queries, news, articles, and online content. Use this for broad information gathering, recent events, or when you need diverse web sources. Supports pagination, content filtering, and freshness controls. Maximum 20 results per request, with offset for pagination.",
        P("query", description="Search query (max 400 chars, 50 words)", required=True),
        P("count", "integer", "Number of results (1-20, default 10)", default=10),
        P("offset", "integer", "Pagination offset (max 9, default 0)", default=0),
        P("freshness", description="Filter by discovery time", enum=("pd", "pw", "pm", "py")),
        P(
            "safesearch",
            description="Adult content filter",
            enum=("off", "moderate", "strict"),
            default="moderate",
        ),
    ),
    T(
        "brave_local_search",
        "Searches for local businesses and places using Brave's Local Search API. Best for queries related to physical locations, businesses, restaurants, services, etc. Returns detailed information including business names and addresses, ratings and review counts, phone numbers and opening hours. Use this when the query implies 'near me' or mentions specific locations. Automatically falls back to web search if no local results are found.",
        P(
            "query",
            description="Local search query (e.g. 'pizza near Central Park')",
            required=True,
        ),
        P("count", "integer", "Number of results (1-20, default 5)", default=5),
    ),
    T(
        "brave_news_search",
        "Searches for news articles using Brave's News Search API. Use for current events, breaking news and recent articles on a topic.",
        P("query", description="News search query", required=True),
        P("count", "integer", "Number of results (1-50)", default=20),
        P("freshness", description="Filter by discovery time", enum=("pd", "pw", "pm", "py")),
    ),
    T(
        "brave_image_search",
        "Searches for images using Brave's Image Search API.",
        P("query", description="Image search query", required=True),
        P("count", "integer", "Number of results (1-200)", default=50),
    ),
    T(
        "brave_video_search",
        "Searches for videos using Brave's Video Search API and returns structured video results with metadata.",
        P("query", description="Video search query", required=True),
        P("count", "integer", "Number of results (1-50)", default=20),
    ),
    T(
        "brave_summarizer",
        "Retrieves AI-generated summaries of web search results using Brave's Summarizer API. Requires a summary key from a prior brave_web_search call made with summary=true.",
        P("key", description="The summary key from a web search response", required=True),
        P("entity_info", "boolean", "Include extra entity info in the summary", default=False),
    ),
)

# --------------------------------------------------------------------------- notion

_BLOCK_ID = P("block_id", description="The ID of the block", required=True)
_PAGE_ID = P("page_id", description="The ID of the page", required=True)
_DATABASE_ID = P("database_id", description="The ID of the database", required=True)

_NOTION = S(
    "notion",
    "Notion workspace: pages, databases, blocks, comments, users and search.",
    T(
        "notion_search",
        "Search pages or databases by title",
        P("query", description="Text to search for in page or database titles"),
        P(
            "filter",
            "object",
            "Limit results to pages or databases: {'property': 'object', 'value': 'page'}",
        ),
        P("page_size", "integer", "Number of results to return (1-100)", default=100),
    ),
    T(
        "notion_retrieve_page",
        "Retrieve information about a page",
        _PAGE_ID,
    ),
    T(
        "notion_create_page",
        "Create a new page as a child of an existing page or database.",
        P("parent", "object", "Parent page_id or database_id", required=True),
        P("properties", "object", "Page properties; at least a title", required=True),
        P("children", "array", "Content blocks of the new page", items="object"),
    ),
    T(
        "notion_update_page_properties",
        "Update properties of a page or an item in a Notion database",
        _PAGE_ID,
        P("properties", "object", "Properties to update", required=True),
    ),
    T(
        "notion_append_block_children",
        "Append new children blocks to a specified parent block in Notion. Requires insert content capabilities. You can optionally specify the 'after' parameter to append after a certain block.",
        P(
            "block_id",
            description="The ID of the parent block (a page ID also works)",
            required=True,
        ),
        P("children", "array", "Array of block objects to append", required=True, items="object"),
        P(
            "after",
            description="The ID of the existing block that the new block should be appended after",
        ),
    ),
    T("notion_retrieve_block", "Retrieve a block from Notion", _BLOCK_ID),
    T(
        "notion_retrieve_block_children",
        "Retrieve the children of a block",
        _BLOCK_ID,
        P("start_cursor", description="Pagination cursor for next page of results"),
        P("page_size", "integer", "Number of results per page (max 100)", default=100),
    ),
    T(
        "notion_update_block",
        "Update the content of a block in Notion based on its type. The update replaces the entire value for a given field.",
        _BLOCK_ID,
        P("block", "object", "The updated content for the block", required=True),
    ),
    T("notion_delete_block", "Delete a block in Notion", _BLOCK_ID),
    T(
        "notion_create_database",
        "Create a database in Notion",
        P("parent", "object", "Parent page of the database", required=True),
        P(
            "title",
            "array",
            "Title of the database as an array of rich text objects",
            items="object",
        ),
        P("properties", "object", "Property schema of the database", required=True),
    ),
    T(
        "notion_query_database",
        "Query a database in Notion",
        _DATABASE_ID,
        P("filter", "object", "Filter conditions"),
        P("sorts", "array", "Sort conditions", items="object"),
        P("start_cursor", description="Pagination cursor"),
        P("page_size", "integer", "Number of results per page", default=100),
    ),
    T("notion_retrieve_database", "Retrieve a database in Notion", _DATABASE_ID),
    T(
        "notion_update_database",
        "Update information about a database in Notion",
        _DATABASE_ID,
        P("title", "array", "New title of the database", items="object"),
        P("description", "array", "New description of the database", items="object"),
        P("properties", "object", "Property schema updates"),
    ),
    T(
        "notion_create_database_item",
        "Create a new item (page) in a Notion database",
        _DATABASE_ID,
        P(
            "properties",
            "object",
            "Properties of the new database item. These should match the database schema.",
            required=True,
        ),
    ),
    T(
        "notion_create_comment",
        "Create a comment in Notion. This requires the integration to have 'insert comment' capabilities. You can either specify a page parent or a discussion_id, but not both.",
        P("parent", "object", "Parent object that specifies the page to comment on"),
        P(
            "discussion_id",
            description="The ID of an existing discussion thread to add a comment to",
        ),
        P(
            "rich_text",
            "array",
            "Array of rich text objects representing the comment content",
            required=True,
            items="object",
        ),
    ),
    T(
        "notion_retrieve_comments",
        "Retrieve a list of unresolved comments from a Notion page or block.",
        P(
            "block_id",
            description="The ID of the block or page whose comments you want",
            required=True,
        ),
    ),
    T(
        "notion_list_all_users",
        "List all users in the Notion workspace. Note: This function requires upgrading to the Notion Enterprise plan.",
    ),
    T(
        "notion_retrieve_user",
        "Retrieve a specific user by user_id in Notion.",
        P("user_id", description="The ID of the user", required=True),
    ),
    T(
        "notion_retrieve_bot_user",
        "Retrieve the bot user associated with the current token in Notion",
    ),
)

# --------------------------------------------------------------------------- google drive

_FILE_ID = P("fileId", description="ID of the Google Drive file", required=True)

_GDRIVE = S(
    "gdrive",
    "Google Drive and Google Sheets: search, read, upload, organise and share files.",
    T(
        "gdrive_search",
        "Search for files in Google Drive",
        P("query", description="Search query", required=True),
        P("pageToken", description="Token for the next page of results"),
        P("pageSize", "integer", "Number of results per page (max 100)", default=10),
    ),
    T(
        "gdrive_read_file",
        "Read contents of a file from Google Drive. Google Docs are exported as Markdown, Sheets as CSV, Presentations as plain text and Drawings as PNG.",
        _FILE_ID,
    ),
    T(
        "gdrive_list_files",
        "List files and folders inside a Google Drive folder",
        P(
            "folderId",
            description="ID of the folder; defaults to the root of My Drive",
            default="root",
        ),
        P("pageSize", "integer", "Number of results per page", default=50),
        P("pageToken", description="Token for the next page of results"),
    ),
    T(
        "gdrive_create_folder",
        "Create a new folder in Google Drive",
        P("name", description="Folder name", required=True),
        P("parentId", description="ID of the parent folder"),
    ),
    T(
        "gdrive_upload_file",
        "Upload a local file to Google Drive, optionally converting it to a Google Docs format",
        P("localPath", description="Path of the local file to upload", required=True),
        P("name", description="Name for the file in Drive; defaults to the local file name"),
        P("parentId", description="ID of the destination folder"),
        P("convert", "boolean", "Convert to the matching Google Workspace format", default=False),
    ),
    T(
        "gdrive_move_file",
        "Move a file or folder to a different folder in Google Drive",
        _FILE_ID,
        P("newParentId", description="ID of the destination folder", required=True),
    ),
    T(
        "gdrive_copy_file",
        "Make a copy of a Google Drive file",
        _FILE_ID,
        P("name", description="Name of the copy"),
        P("parentId", description="Folder for the copy"),
    ),
    T(
        "gdrive_delete_file",
        "Move a Google Drive file to the trash, or delete it permanently",
        _FILE_ID,
        P("permanent", "boolean", "Skip the trash and delete permanently", default=False),
    ),
    T(
        "gdrive_share_file",
        "Share a Google Drive file with a user, group, domain or anyone with the link",
        _FILE_ID,
        P(
            "role",
            description="Access level to grant",
            required=True,
            enum=("reader", "commenter", "writer", "owner"),
        ),
        P(
            "type",
            description="Grantee type",
            required=True,
            enum=("user", "group", "domain", "anyone"),
        ),
        P("emailAddress", description="Email of the user or group (for type user/group)"),
        P("sendNotificationEmail", "boolean", "Notify the grantee by email", default=True),
    ),
    T(
        "gdrive_list_permissions",
        "List who has access to a Google Drive file and with which role",
        _FILE_ID,
    ),
    T(
        "gdrive_remove_permission",
        "Revoke a permission from a Google Drive file",
        _FILE_ID,
        P("permissionId", description="ID of the permission to remove", required=True),
    ),
    T(
        "gsheets_read",
        "Read data from a Google Spreadsheet with flexible options for ranges and formatting",
        P("spreadsheetId", description="The ID of the spreadsheet to read", required=True),
        P("ranges", "array", "Optional A1 notation ranges like ['Sheet1!A1:B10']", items="string"),
        P("sheetId", "integer", "Optional specific sheet ID to read"),
    ),
    T(
        "gsheets_update_cell",
        "Update a cell value in a Google Spreadsheet",
        P("fileId", description="ID of the spreadsheet", required=True),
        P("range", description="Cell range in A1 notation (e.g. 'Sheet1!A1')", required=True),
        P("value", description="New cell value", required=True),
    ),
)

# --------------------------------------------------------------------------- stripe

_CUSTOMER = P("customer", description="The ID of the Stripe customer")

_STRIPE = S(
    "stripe",
    "Stripe payments API: customers, products, prices, payment links, invoices, refunds, subscriptions, coupons and disputes.",
    T(
        "create_customer",
        "This tool will create a customer in Stripe.",
        P("name", description="The name of the customer", required=True),
        P("email", description="The email of the customer"),
    ),
    T(
        "list_customers",
        "This tool will fetch a list of Customers from Stripe.",
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
        P(
            "email",
            description="A case-sensitive filter on the list based on the customer's email field",
        ),
    ),
    T(
        "create_product",
        "This tool will create a product in Stripe.",
        P("name", description="The name of the product", required=True),
        P("description", description="The description of the product"),
    ),
    T(
        "list_products",
        "This tool will fetch a list of Products from Stripe.",
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
    ),
    T(
        "create_price",
        "This tool will create a price in Stripe. If a product has not already been specified, a product should be created first.",
        P("product", description="The ID of the product to create the price for", required=True),
        P("unit_amount", "integer", "The unit amount of the price in cents", required=True),
        P("currency", description="The currency of the price", required=True, default="usd"),
        P(
            "recurring_interval",
            description="Billing interval for recurring prices",
            enum=("day", "week", "month", "year"),
        ),
    ),
    T(
        "list_prices",
        "This tool will fetch a list of Prices from Stripe.",
        P("product", description="The ID of the product to list prices for"),
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
    ),
    T(
        "create_payment_link",
        "This tool will create a payment link in Stripe.",
        P("price", description="The ID of the price to create the payment link for", required=True),
        P(
            "quantity",
            "integer",
            "The quantity of the product to include",
            required=True,
            default=1,
        ),
        P("redirect_url", description="URL to redirect to after a successful payment"),
    ),
    T(
        "create_invoice",
        "This tool will create an invoice in Stripe.",
        P(
            "customer",
            description="The ID of the customer to create the invoice for",
            required=True,
        ),
        P("days_until_due", "integer", "The number of days until the invoice is due", default=30),
    ),
    T(
        "create_invoice_item",
        "This tool will create an invoice item in Stripe.",
        P(
            "customer",
            description="The ID of the customer to create the invoice item for",
            required=True,
        ),
        P("price", description="The ID of the price for the item", required=True),
        P("invoice", description="The ID of the invoice to add the item to", required=True),
    ),
    T(
        "finalize_invoice",
        "This tool will finalize an invoice in Stripe.",
        P("invoice", description="The ID of the invoice to finalize", required=True),
    ),
    T(
        "list_invoices",
        "This tool will fetch a list of Invoices from Stripe.",
        _CUSTOMER,
        P(
            "status",
            description="Filter by invoice status",
            enum=("draft", "open", "paid", "uncollectible", "void"),
        ),
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
    ),
    T("retrieve_balance", "This tool will retrieve the balance from Stripe. It takes no input."),
    T(
        "create_refund",
        "This tool will refund a payment intent in Stripe.",
        P("payment_intent", description="The ID of the PaymentIntent to refund", required=True),
        P("amount", "integer", "The amount to refund in cents; defaults to the full amount"),
        P(
            "reason",
            description="Reason for the refund",
            enum=("duplicate", "fraudulent", "requested_by_customer"),
        ),
    ),
    T(
        "list_payment_intents",
        "This tool will list payment intents in Stripe.",
        _CUSTOMER,
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
    ),
    T(
        "list_subscriptions",
        "This tool will list all subscriptions in Stripe.",
        _CUSTOMER,
        P("price", description="Filter by price ID"),
        P(
            "status",
            description="Filter by status",
            enum=("active", "past_due", "unpaid", "canceled", "incomplete", "trialing", "all"),
        ),
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
    ),
    T(
        "update_subscription",
        "This tool will update an existing subscription in Stripe. If changing an existing subscription item, the existing subscription item has to be set to deleted and the new one has to be added.",
        P("subscription", description="The ID of the subscription to update", required=True),
        P(
            "items",
            "array",
            "Subscription items to update or add, each with 'price' and 'quantity'",
            items="object",
        ),
        P(
            "proration_behavior",
            description="How to handle prorations",
            enum=("create_prorations", "none", "always_invoice"),
        ),
    ),
    T(
        "cancel_subscription",
        "This tool will cancel a subscription in Stripe.",
        P("subscription", description="The ID of the subscription to cancel", required=True),
    ),
    T(
        "create_coupon",
        "Create a coupon in Stripe that can be applied to invoices, subscriptions or checkout sessions.",
        P("name", description="Name of the coupon displayed to customers", required=True),
        P(
            "percent_off",
            "number",
            "A positive float larger than 0 and smaller or equal to 100 for percentage discounts",
        ),
        P(
            "amount_off",
            "integer",
            "A positive integer representing the amount to subtract (in cents)",
        ),
        P("currency", description="Three-letter ISO code for the currency of amount_off"),
        P(
            "duration",
            description="How long the discount applies",
            enum=("once", "repeating", "forever"),
            default="once",
        ),
        P(
            "duration_in_months",
            "integer",
            "Number of months the coupon applies if duration is repeating",
        ),
    ),
    T(
        "list_coupons",
        "Fetch a list of Coupons from Stripe.",
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
    ),
    T(
        "list_disputes",
        "Fetch a list of disputes in Stripe.",
        P(
            "charge",
            description="Only return disputes associated to the charge specified by this charge ID",
        ),
        P(
            "payment_intent",
            description="Only return disputes associated to the PaymentIntent specified",
        ),
        P(
            "limit",
            "integer",
            "A limit on the number of objects to be returned (1-100)",
            default=10,
        ),
    ),
    T(
        "update_dispute",
        "When you receive a dispute, contacting your customer is always the best first step. If that doesn't work, you can submit evidence to help resolve the dispute in your favor. This tool helps.",
        P("dispute", description="The ID of the dispute to update", required=True),
        P(
            "evidence",
            "object",
            "Evidence to upload to respond to the dispute, e.g. customer_communication, receipt, shipping_tracking_number",
        ),
        P("submit", "boolean", "Whether to immediately submit evidence to the bank", default=False),
    ),
    T(
        "search_stripe_documentation",
        "Search and retrieve relevant Stripe documentation to answer integration questions.",
        P(
            "question",
            description="The user question to search an answer for in the Stripe documentation",
            required=True,
        ),
        P(
            "language",
            description="Programming language for code examples",
            enum=("dotnet", "go", "java", "node", "php", "ruby", "python", "curl"),
        ),
    ),
)

# --------------------------------------------------------------------------- aws s3

_BUCKET = P("bucket", description="Name of the S3 bucket", required=True)
_KEY = P("key", description="Object key", required=True)

_S3 = S(
    "s3",
    "Amazon S3: buckets, objects, presigned URLs and bucket policies.",
    T(
        "list_buckets",
        "Returns a list of all S3 buckets owned by the authenticated sender of the request.",
        P("region", description="AWS region to list buckets in"),
    ),
    T(
        "create_bucket",
        "Creates a new S3 bucket.",
        _BUCKET,
        P("region", description="AWS region for the bucket", default="us-east-1"),
    ),
    T(
        "delete_bucket",
        "Deletes an S3 bucket. All objects in the bucket must be deleted before the bucket itself can be deleted.",
        _BUCKET,
    ),
    T(
        "list_objects",
        "Returns some or all (up to 1,000) of the objects in an S3 bucket with each request. You can use the request parameters as selection criteria to return a subset of the objects in a bucket.",
        _BUCKET,
        P("prefix", description="Limits the response to keys that begin with the specified prefix"),
        P("delimiter", description="Character used to group keys, e.g. '/'"),
        P("max_keys", "integer", "Maximum number of keys returned", default=1000),
        P("continuation_token", description="Token to continue a truncated listing"),
    ),
    T(
        "get_object",
        "Retrieves an object from Amazon S3. Text objects are returned as text, binary objects as base64.",
        _BUCKET,
        _KEY,
        P("version_id", description="Version of the object to fetch"),
    ),
    T(
        "put_object",
        "Adds an object to a bucket, uploading from a local file or from inline content.",
        _BUCKET,
        _KEY,
        P("file_path", description="Local file to upload"),
        P("content", description="Inline text content to upload instead of a file"),
        P("content_type", description="MIME type of the object"),
    ),
    T("delete_object", "Removes an object from a bucket.", _BUCKET, _KEY),
    T(
        "copy_object",
        "Creates a copy of an object that is already stored in Amazon S3.",
        P("source_bucket", description="Bucket of the source object", required=True),
        P("source_key", description="Key of the source object", required=True),
        P("dest_bucket", description="Destination bucket", required=True),
        P("dest_key", description="Destination key", required=True),
    ),
    T(
        "head_object",
        "Retrieves metadata from an object without returning the object itself: size, content type, ETag, last modified and user metadata.",
        _BUCKET,
        _KEY,
    ),
    T(
        "generate_presigned_url",
        "Generate a presigned URL that grants temporary access to an S3 object without AWS credentials.",
        _BUCKET,
        _KEY,
        P(
            "operation",
            description="Operation the URL allows",
            enum=("get_object", "put_object"),
            default="get_object",
        ),
        P("expires_in", "integer", "Seconds until the URL expires", default=3600),
    ),
    T("get_bucket_policy", "Returns the policy of a specified bucket.", _BUCKET),
    T(
        "put_bucket_policy",
        "Applies an Amazon S3 bucket policy to an Amazon S3 bucket.",
        _BUCKET,
        P("policy", description="The bucket policy as a JSON document", required=True),
    ),
)

# --------------------------------------------------------------------------- kubernetes

_NS = P("namespace", description="Namespace of the resource")
_POD_NAME = P("name", description="Name of the Pod", required=True)

_K8S = S(
    "k8s",
    "Kubernetes and OpenShift cluster management: pods, generic resources, events, namespaces and Helm releases.",
    T(
        "configuration_view",
        "Get the current Kubernetes configuration content as a kubeconfig YAML",
        P(
            "minified",
            "boolean",
            "Return a minified version of the configuration (current context only)",
            default=True,
        ),
    ),
    T("namespaces_list", "List all the Kubernetes namespaces in the current cluster"),
    T(
        "events_list",
        "List all the Kubernetes events in the current cluster from all namespaces",
        P(
            "namespace",
            description="Optional Namespace to retrieve the events from. If not provided, will list events from all namespaces",
        ),
    ),
    T(
        "pods_list",
        "List all the Kubernetes pods in the current cluster from all namespaces",
        P(
            "labelSelector",
            description="Optional Kubernetes label selector (e.g. 'app=myapp,env=prod')",
        ),
    ),
    T(
        "pods_list_in_namespace",
        "List all the Kubernetes pods in the specified namespace in the current cluster",
        P("namespace", description="Namespace to list pods from", required=True),
        P("labelSelector", description="Optional Kubernetes label selector"),
    ),
    T(
        "pods_get",
        "Get a Kubernetes Pod in the current or provided namespace with the provided name",
        _NS,
        _POD_NAME,
    ),
    T(
        "pods_delete",
        "Delete a Kubernetes Pod in the current or provided namespace with the provided name",
        _NS,
        _POD_NAME,
    ),
    T(
        "pods_log",
        "Get the logs of a Kubernetes Pod in the current or provided namespace with the provided name",
        _NS,
        _POD_NAME,
        P("container", description="Name of the Pod container to get the logs from (Optional)"),
        P(
            "previous",
            "boolean",
            "Return previous terminated container logs (Optional)",
            default=False,
        ),
        P(
            "tail",
            "integer",
            "Number of lines to retrieve from the end of the logs (Optional)",
            default=100,
        ),
    ),
    T(
        "pods_exec",
        "Execute a command in a Kubernetes Pod in the current or provided namespace with the provided name and command",
        _NS,
        _POD_NAME,
        P(
            "command",
            "array",
            "Command to execute in the Pod container, e.g. ['ls', '-l', '/tmp']",
            required=True,
            items="string",
        ),
        P(
            "container",
            description="Name of the Pod container where the command will be executed (Optional)",
        ),
    ),
    T(
        "pods_run",
        "Run a Kubernetes Pod in the current or provided namespace with the provided container image and optional name",
        _NS,
        P("image", description="Container Image to run in the Pod", required=True),
        P("name", description="Name of the Pod (Optional, random name if not provided)"),
        P(
            "port",
            "number",
            "TCP/IP port to expose from the Pod container (Optional, no port exposed if not provided)",
        ),
    ),
    T(
        "pods_top",
        "List the resource consumption (CPU and memory) as recorded by the Kubernetes Metrics Server for the specified Kubernetes Pods",
        P("namespace", description="Namespace to get the Pods resource consumption from"),
        P(
            "all_namespaces",
            "boolean",
            "Whether to get resource consumption from Pods in all namespaces",
            default=True,
        ),
        P("name", description="Name of the Pod to get the resource consumption from"),
    ),
    T(
        "nodes_top",
        "List the resource consumption (CPU and memory) as recorded by the Kubernetes Metrics Server for the specified Kubernetes Nodes or all nodes in the cluster",
        P(
            "name",
            description="Name of the Node to get the resource consumption from (Optional, all Nodes if not provided)",
        ),
    ),
    T(
        "resources_list",
        "List Kubernetes resources and objects in the current cluster by providing their apiVersion and kind and optionally the namespace and label selector (common apiVersion and kind include: v1 Pod, v1 Service, v1 Node, apps/v1 Deployment, networking.k8s.io/v1 Ingress)",
        P(
            "apiVersion",
            description="apiVersion of the resources (e.g. v1, apps/v1)",
            required=True,
        ),
        P(
            "kind",
            description="kind of the resources (e.g. Pod, Service, Deployment)",
            required=True,
        ),
        _NS,
        P("labelSelector", description="Optional Kubernetes label selector"),
    ),
    T(
        "resources_get",
        "Get a Kubernetes resource in the current cluster by providing its apiVersion, kind, optionally the namespace, and its name",
        P("apiVersion", description="apiVersion of the resource", required=True),
        P("kind", description="kind of the resource", required=True),
        _NS,
        P("name", description="Name of the resource", required=True),
    ),
    T(
        "resources_create_or_update",
        "Create or update a Kubernetes resource in the current cluster by providing a YAML or JSON representation of the resource",
        P(
            "resource",
            description="A JSON or YAML containing a representation of the Kubernetes resource. Should include top-level fields such as apiVersion, kind, metadata, and spec",
            required=True,
        ),
    ),
    T(
        "resources_delete",
        "Delete a Kubernetes resource in the current cluster by providing its apiVersion, kind, optionally the namespace, and its name",
        P("apiVersion", description="apiVersion of the resource", required=True),
        P("kind", description="kind of the resource", required=True),
        _NS,
        P("name", description="Name of the resource", required=True),
    ),
    T(
        "resources_scale",
        "Get or update the scale (replica count) of a Kubernetes Deployment or StatefulSet",
        P(
            "kind",
            description="Kind of the workload",
            required=True,
            enum=("Deployment", "StatefulSet"),
        ),
        _NS,
        P("name", description="Name of the workload", required=True),
        P("scale", "integer", "New number of replicas; omit to read the current scale"),
    ),
    T(
        "helm_install",
        "Install a Helm chart in the current or provided namespace",
        P(
            "chart",
            description="Chart reference to install (e.g. stable/grafana, oci://ghcr.io/nginxinc/charts/nginx-ingress)",
            required=True,
        ),
        P("name", description="Name of the Helm release (Optional, random name if not provided)"),
        _NS,
        P("values", "object", "Values to pass to the Helm chart (Optional)"),
    ),
    T(
        "helm_list",
        "List all the Helm releases in the current or provided namespace (or in all namespaces if specified)",
        _NS,
        P(
            "all_namespaces",
            "boolean",
            "If true, lists all Helm releases in all namespaces",
            default=False,
        ),
    ),
    T(
        "helm_uninstall",
        "Uninstall a Helm release in the current or provided namespace",
        P("name", description="Name of the Helm release to uninstall", required=True),
        _NS,
    ),
)

# --------------------------------------------------------------------------- docker

_CONTAINER = P("container_id", description="Container ID or name", required=True)

_DOCKER = S(
    "docker",
    "Docker engine management: containers, images, networks and volumes.",
    T(
        "list_containers",
        "List all Docker containers",
        P("all", "boolean", "Show all containers (default shows just running)", default=False),
        P(
            "filters",
            "object",
            "Filter containers, e.g. {'status': ['exited'], 'label': ['app=web']}",
        ),
    ),
    T(
        "create_container",
        "Create a new Docker container without starting it",
        P("image", description="Image to create the container from", required=True),
        P("name", description="Container name"),
        P("command", description="Command to run"),
        P("environment", "object", "Environment variables"),
        P("ports", "object", "Port mappings, e.g. {'6379/tcp': 6379}"),
        P("volumes", "object", "Volume mounts"),
    ),
    T(
        "run_container",
        "Run an image in a new Docker container (preferred over `create_container` + `start_container`)",
        P("image", description="Image to run", required=True),
        P("name", description="Container name"),
        P("command", description="Command to run"),
        P("detach", "boolean", "Run the container in the background", default=True),
        P("environment", "object", "Environment variables"),
        P("ports", "object", "Port mappings, e.g. {'6379/tcp': 6379}"),
        P("volumes", "object", "Volume mounts"),
    ),
    T(
        "recreate_container",
        "Stop and remove a container, then run a new container. Fails if the container does not exist.",
        _CONTAINER,
        P("image", description="Image to run the new container with"),
    ),
    T("start_container", "Start a Docker container", _CONTAINER),
    T(
        "fetch_container_logs",
        "Fetch logs for a Docker container",
        _CONTAINER,
        P("tail", "integer", "Number of lines to show from the end", default=100),
        P("since", description="Only logs since this time, e.g. '10m' or an ISO timestamp"),
    ),
    T("stop_container", "Stop a Docker container", _CONTAINER),
    T(
        "remove_container",
        "Remove a Docker container",
        _CONTAINER,
        P("force", "boolean", "Force the removal of a running container", default=False),
    ),
    T(
        "list_images",
        "List Docker images",
        P("name", description="Only show images belonging to this repository name"),
        P("all", "boolean", "Show intermediate image layers", default=False),
    ),
    T(
        "pull_image",
        "Pull a Docker image",
        P(
            "repository",
            description="Image repository, e.g. 'nginx' or 'ghcr.io/org/app'",
            required=True,
        ),
        P("tag", description="Image tag", default="latest"),
    ),
    T(
        "push_image",
        "Push a Docker image",
        P("repository", description="Image repository", required=True),
        P("tag", description="Image tag"),
    ),
    T(
        "build_image",
        "Build a Docker image from a Dockerfile",
        P("path", description="Path to the build context directory", required=True),
        P("tag", description="Image tag, e.g. 'myapp:1.0'", required=True),
        P(
            "dockerfile",
            description="Path to the Dockerfile within the build context",
            default="Dockerfile",
        ),
    ),
    T(
        "remove_image",
        "Remove a Docker image",
        P("image", description="Image ID or name", required=True),
        P("force", "boolean", "Force removal", default=False),
    ),
    T("list_networks", "List Docker networks", P("filters", "object", "Filter networks")),
    T(
        "create_network",
        "Create a Docker network",
        P("name", description="Network name", required=True),
        P("driver", description="Network driver", default="bridge"),
        P("internal", "boolean", "Restrict external access", default=False),
    ),
    T(
        "remove_network",
        "Remove a Docker network",
        P("network_id", description="Network ID or name", required=True),
    ),
    T("list_volumes", "List Docker volumes"),
    T(
        "create_volume",
        "Create a Docker volume",
        P("name", description="Volume name", required=True),
        P("driver", description="Volume driver", default="local"),
    ),
    T(
        "remove_volume",
        "Remove a Docker volume",
        P("volume_name", description="Volume name", required=True),
        P("force", "boolean", "Force removal", default=False),
    ),
)

# --------------------------------------------------------------------------- sentry

_ORG = P(
    "organizationSlug",
    description="The organization's slug. You can find a list of existing organizations using the `find_organizations()` tool.",
    required=True,
)
_REGION = P(
    "regionUrl", description="The region URL for the organization you're querying, if known."
)

_SENTRY = S(
    "sentry",
    "Sentry error monitoring: organizations, projects, issues, events, traces, releases and DSNs.",
    T(
        "whoami",
        "Identify the authenticated user in Sentry. Use this tool when you need to know the current user's name or email address.",
    ),
    T("find_organizations", "Find organizations that the user has access to in Sentry."),
    T("find_teams", "Find teams in an organization in Sentry.", _ORG, _REGION),
    T("find_projects", "Find projects in Sentry.", _ORG, _REGION),
    T(
        "find_releases",
        "Find releases in Sentry. Use this tool when you need to find the most recent releases, or find out when a release was deployed.",
        _ORG,
        _REGION,
        P(
            "projectSlug",
            description="The project's slug. This will default to all projects you have access to.",
        ),
        P("query", description="Search for versions which contain the provided string."),
    ),
    T(
        "get_issue_details",
        "Get detailed information about a specific Sentry issue by ID, including the latest event, stacktrace and tags. Accepts an issue URL or an issue ID such as 'CLOUDFLARE-MCP-41'.",
        P("organizationSlug", description="The organization's slug"),
        P("issueId", description="The Issue ID, e.g. 'PROJECT-1Z43'"),
        P(
            "issueUrl",
            description="The URL of the issue, e.g. https://my-organization.sentry.io/issues/PROJECT-1Z43",
        ),
        P("eventId", description="The ID of a specific event to inspect"),
    ),
    T(
        "get_trace_details",
        "Get high-level overview of a Sentry trace by ID: span counts, services, timing and a sample of spans.",
        _ORG,
        P("traceId", description="The trace ID (32-character hex string)", required=True),
    ),
    T(
        "get_event_attachment",
        "Download attachments from a Sentry event, such as minidumps, log files or screenshots.",
        _ORG,
        P("projectSlug", description="The project's slug", required=True),
        P("eventId", description="The ID of the event", required=True),
        P(
            "attachmentId",
            description="The ID of a specific attachment; lists attachments if omitted",
        ),
    ),
    T(
        "update_issue",
        "Update an issue's status or assignment in Sentry. This allows you to resolve, ignore, or reassign issues.",
        P("organizationSlug", description="The organization's slug"),
        P("issueId", description="The Issue ID, e.g. 'PROJECT-1Z43'"),
        P("issueUrl", description="The URL of the issue"),
        P(
            "status",
            description="The new status for the issue",
            enum=("resolved", "resolvedInNextRelease", "unresolved", "ignored"),
        ),
        P("assignedTo", description="The assignee in format 'user:ID' or 'team:ID'"),
    ),
    T(
        "search_events",
        "Search for events in Sentry using natural language. Returns individual events, or aggregated counts and statistics such as error counts by project or slowest spans.",
        _ORG,
        P(
            "naturalLanguageQuery",
            description="Natural language description of what you want to search for",
            required=True,
        ),
        P("projectSlug", description="Filter by project slug"),
        P("limit", "integer", "Maximum number of results to return", default=10),
    ),
    T(
        "search_issues",
        "Search for grouped issues/problems in Sentry - returns a LIST of issues, NOT counts or aggregations. Uses AI to translate natural language queries, e.g. 'critical bugs from last week', 'unhandled errors affecting 100+ users'.",
        _ORG,
        P(
            "naturalLanguageQuery",
            description="Natural language description of issues to search for",
            required=True,
        ),
        P("projectSlugOrId", description="Filter by project"),
        P("limit", "integer", "Maximum number of issues to return", default=10),
    ),
    T(
        "create_team",
        "Create a new team in Sentry.",
        _ORG,
        P("name", description="The name of the team to create", required=True),
    ),
    T(
        "create_project",
        "Create a new project in Sentry, giving you access to a new SENTRY_DSN.",
        _ORG,
        P("teamSlug", description="The team's slug", required=True),
        P("name", description="The name of the project to create", required=True),
        P("platform", description="The platform for the project, e.g. python, javascript, react"),
    ),
    T(
        "update_project",
        "Update project settings in Sentry, such as name, slug, platform, and team assignment.",
        _ORG,
        P("projectSlug", description="The project's slug", required=True),
        P("name", description="The new name for the project"),
        P("platform", description="The platform for the project"),
        P("teamSlug", description="The team to assign this project to"),
    ),
    T(
        "create_dsn",
        "Create an additional DSN for an EXISTING project.",
        _ORG,
        P("projectSlug", description="The project's slug", required=True),
        P("name", description="The name of the DSN to create", required=True),
    ),
    T(
        "find_dsns",
        "List all Sentry DSNs for a specific project.",
        _ORG,
        P("projectSlug", description="The project's slug", required=True),
    ),
    T(
        "analyze_issue_with_seer",
        "Use Seer to analyze production errors and get detailed root cause analysis with specific code fixes.",
        P("organizationSlug", description="The organization's slug"),
        P("issueId", description="The Issue ID"),
        P("issueUrl", description="The URL of the issue"),
        P("instruction", description="Optional custom instruction for the root cause analysis"),
    ),
    T(
        "search_docs",
        "Search Sentry documentation for SDK setup, instrumentation, and configuration guidance.",
        P("query", description="The search query in natural language", required=True),
        P("guide", description="Optional guide filter, e.g. 'python/django'"),
    ),
)

# --------------------------------------------------------------------------- memory

_MEMORY = S(
    "memory",
    "Persistent memory as a local knowledge graph of entities, relations and observations.",
    T(
        "create_entities",
        "Create multiple new entities in the knowledge graph",
        P(
            "entities",
            "array",
            "Entities to create, each with 'name', 'entityType' and 'observations'",
            required=True,
            items="object",
        ),
    ),
    T(
        "create_relations",
        "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
        P(
            "relations",
            "array",
            "Relations to create, each with 'from', 'to' and 'relationType'",
            required=True,
            items="object",
        ),
    ),
    T(
        "add_observations",
        "Add new observations to existing entities in the knowledge graph",
        P(
            "observations",
            "array",
            "Items with 'entityName' and 'contents' (an array of observation strings)",
            required=True,
            items="object",
        ),
    ),
    T(
        "delete_entities",
        "Delete multiple entities and their associated relations from the knowledge graph",
        P(
            "entityNames",
            "array",
            "An array of entity names to delete",
            required=True,
            items="string",
        ),
    ),
    T(
        "delete_observations",
        "Delete specific observations from entities in the knowledge graph",
        P(
            "deletions",
            "array",
            "Items with 'entityName' and 'observations' to delete",
            required=True,
            items="object",
        ),
    ),
    T(
        "delete_relations",
        "Delete multiple relations from the knowledge graph",
        P(
            "relations",
            "array",
            "Relations to delete, each with 'from', 'to' and 'relationType'",
            required=True,
            items="object",
        ),
    ),
    T("read_graph", "Read the entire knowledge graph"),
    T(
        "search_nodes",
        "Search for nodes in the knowledge graph based on a query",
        P(
            "query",
            description="The search query to match against entity names, types, and observation content",
            required=True,
        ),
    ),
    T(
        "open_nodes",
        "Open specific nodes in the knowledge graph by their names",
        P("names", "array", "An array of entity names to retrieve", required=True, items="string"),
    ),
)

# --------------------------------------------------------------------------- weather

_LAT = P("latitude", "number", "Latitude of the location", required=True)
_LON = P("longitude", "number", "Longitude of the location", required=True)

_WEATHER = S(
    "weather",
    "Weather data: current conditions, forecasts, severe weather alerts, air quality and history.",
    T(
        "get_alerts",
        "Get weather alerts for a US state.",
        P("state", description="Two-letter US state code (e.g. CA, NY)", required=True),
    ),
    T(
        "get_forecast",
        "Get weather forecast for a location.",
        _LAT,
        _LON,
        P("days", "integer", "Number of forecast days", default=5),
    ),
    T(
        "get_hourly_forecast",
        "Get an hour-by-hour forecast (temperature, precipitation probability, wind) for the next 48 hours.",
        _LAT,
        _LON,
        P("hours", "integer", "Number of hours to return", default=24),
    ),
    T(
        "get_current_weather",
        "Get current weather conditions for a city: temperature, feels-like, humidity, wind and a short description.",
        P(
            "city",
            description="City name, optionally with country code (e.g. 'Paris,FR')",
            required=True,
        ),
        P("units", description="Unit system", enum=("metric", "imperial"), default="metric"),
    ),
    T(
        "get_air_quality",
        "Get the current air quality index (AQI) and pollutant concentrations (PM2.5, PM10, O3, NO2) for a location.",
        _LAT,
        _LON,
    ),
    T(
        "get_historical_weather",
        "Get observed daily weather for a location on past dates.",
        _LAT,
        _LON,
        P("start_date", description="First date, YYYY-MM-DD", required=True),
        P("end_date", description="Last date, YYYY-MM-DD", required=True),
    ),
)

# --------------------------------------------------------------------------- google maps

_MAPS = S(
    "maps",
    "Google Maps Platform: geocoding, places, directions, distance matrix and elevation.",
    T(
        "maps_geocode",
        "Convert an address into geographic coordinates",
        P("address", description="The address to geocode", required=True),
    ),
    T(
        "maps_reverse_geocode",
        "Convert coordinates into an address",
        P("latitude", "number", "Latitude coordinate", required=True),
        P("longitude", "number", "Longitude coordinate", required=True),
    ),
    T(
        "maps_search_places",
        "Search for places using Google Places API",
        P("query", description="Search query", required=True),
        P(
            "location",
            "object",
            "Optional center point for the search, with 'latitude' and 'longitude'",
        ),
        P("radius", "number", "Search radius in meters (max 50000)"),
    ),
    T(
        "maps_place_details",
        "Get detailed information about a specific place",
        P("place_id", description="The place ID to get details for", required=True),
    ),
    T(
        "maps_distance_matrix",
        "Calculate travel distance and time for multiple origins and destinations",
        P(
            "origins",
            "array",
            "Array of origin addresses or coordinates",
            required=True,
            items="string",
        ),
        P(
            "destinations",
            "array",
            "Array of destination addresses or coordinates",
            required=True,
            items="string",
        ),
        P(
            "mode",
            description="Travel mode",
            enum=("driving", "walking", "bicycling", "transit"),
            default="driving",
        ),
    ),
    T(
        "maps_elevation",
        "Get elevation data for locations on the earth",
        P(
            "locations",
            "array",
            "Array of locations, each with 'latitude' and 'longitude'",
            required=True,
            items="object",
        ),
    ),
    T(
        "maps_directions",
        "Get directions between two points",
        P("origin", description="Starting point address or coordinates", required=True),
        P("destination", description="Ending point address or coordinates", required=True),
        P(
            "mode",
            description="Travel mode",
            enum=("driving", "walking", "bicycling", "transit"),
            default="driving",
        ),
    ),
)

# --------------------------------------------------------------------------- time

_TIME = S(
    "time",
    "Time and timezone conversion using IANA timezone names.",
    T(
        "get_current_time",
        "Get current time in a specific timezones",
        P(
            "timezone",
            description="IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use 'UTC' as local timezone if no timezone provided by the user.",
            required=True,
        ),
    ),
    T(
        "convert_time",
        "Convert time between timezones",
        P(
            "source_timezone",
            description="Source IANA timezone name (e.g., 'America/New_York')",
            required=True,
        ),
        P("time", description="Time to convert in 24-hour format (HH:MM)", required=True),
        P(
            "target_timezone",
            description="Target IANA timezone name (e.g., 'Asia/Tokyo')",
            required=True,
        ),
    ),
)

# --------------------------------------------------------------------------- todoist

_TASK_NAME = P(
    "task_name",
    description="Name/content of the task to search for and act on (partial match)",
    required=True,
)

_TODOIST = S(
    "todoist",
    "Todoist personal task management: tasks, projects, sections, labels and comments.",
    T(
        "todoist_create_task",
        "Create a new task in Todoist with optional description, due date, and priority",
        P("content", description="The content/title of the task", required=True),
        P("description", description="Detailed description of the task"),
        P(
            "due_string",
            description="Natural language due date like 'tomorrow', 'next Monday', 'Jan 23'",
        ),
        P("priority", "integer", "Task priority from 1 (normal) to 4 (urgent)", default=1),
        P("project_id", description="Project to add the task to; defaults to the Inbox"),
        P("labels", "array", "Label names to attach", items="string"),
    ),
    T(
        "todoist_get_tasks",
        "Get a list of tasks from Todoist with various filters",
        P("project_id", description="Filter tasks by project ID"),
        P(
            "filter",
            description="Natural language filter like 'today', 'tomorrow', 'next week', 'priority 1', 'overdue'",
        ),
        P("priority", "integer", "Filter by priority level (1-4)"),
        P("limit", "integer", "Maximum number of tasks to return", default=10),
    ),
    T(
        "todoist_update_task",
        "Update an existing task in Todoist by searching for it by name and then updating it",
        _TASK_NAME,
        P("content", description="New content/title for the task"),
        P("description", description="New description for the task"),
        P("due_string", description="New due date in natural language"),
        P("priority", "integer", "New priority level from 1 (normal) to 4 (urgent)"),
    ),
    T("todoist_delete_task", "Delete a task from Todoist by searching for it by name", _TASK_NAME),
    T("todoist_complete_task", "Mark a task as complete by searching for it by name", _TASK_NAME),
    T("todoist_get_projects", "Get all projects from Todoist"),
    T(
        "todoist_create_project",
        "Create a new project in Todoist",
        P("name", description="Name of the project", required=True),
        P("color", description="Color of the project"),
        P("is_favorite", "boolean", "Mark the project as favorite", default=False),
    ),
    T(
        "todoist_get_sections",
        "Get sections of a Todoist project",
        P("project_id", description="ID of the project", required=True),
    ),
    T(
        "todoist_create_section",
        "Create a new section in a Todoist project",
        P("project_id", description="ID of the project", required=True),
        P("name", description="Name of the section", required=True),
    ),
    T(
        "todoist_add_comment",
        "Add a comment to a Todoist task",
        _TASK_NAME,
        P("content", description="Comment text", required=True),
    ),
    T("todoist_get_labels", "Get all personal labels from Todoist"),
    T(
        "todoist_create_label",
        "Create a new personal label in Todoist",
        P("name", description="Name of the label", required=True),
        P("color", description="Color of the label"),
    ),
)

# --------------------------------------------------------------------------- trello

_CARD_ID = P("cardId", description="ID of the card", required=True)
_LIST_ID = P("listId", description="ID of the list", required=True)

_TRELLO = S(
    "trello",
    "Trello boards: lists, cards, comments and activity on the active board.",
    T("list_boards", "List all boards the user has access to"),
    T(
        "set_active_board",
        "Set the active board for future operations",
        P("boardId", description="ID of the board to set as active", required=True),
    ),
    T(
        "get_lists",
        "Retrieve all lists from the specified board",
        P("boardId", description="ID of the board; defaults to the active board"),
    ),
    T("get_cards_by_list_id", "Fetch all cards from a specific list", _LIST_ID),
    T("get_my_cards", "Fetch all cards assigned to the current user"),
    T(
        "get_recent_activity",
        "Fetch recent activity on the Trello board",
        P("limit", "number", "Number of activities to fetch", default=10),
    ),
    T(
        "add_card_to_list",
        "Add a new card to a specified list",
        _LIST_ID,
        P("name", description="Name of the card", required=True),
        P("description", description="Description of the card"),
        P("dueDate", description="Due date for the card (ISO 8601 format)"),
        P("labels", "array", "Array of label IDs to apply to the card", items="string"),
    ),
    T(
        "update_card_details",
        "Update an existing card's details",
        _CARD_ID,
        P("name", description="Updated name of the card"),
        P("description", description="Updated description of the card"),
        P("dueDate", description="Updated due date for the card (ISO 8601 format)"),
        P("labels", "array", "Updated array of label IDs", items="string"),
    ),
    T(
        "move_card",
        "Move a card to a different list",
        _CARD_ID,
        P("listId", description="ID of the target list", required=True),
    ),
    T("archive_card", "Send a card to the archive", _CARD_ID),
    T(
        "add_comment",
        "Add a comment to a Trello card",
        _CARD_ID,
        P("text", description="The text of the comment", required=True),
    ),
    T(
        "attach_image_to_card",
        "Attach an image to a card directly from a URL",
        _CARD_ID,
        P("imageUrl", description="URL of the image to attach", required=True),
        P("name", description="Optional name for the attachment"),
    ),
    T(
        "add_list_to_board",
        "Add a new list to the board",
        P("name", description="Name of the new list", required=True),
    ),
    T("archive_list", "Send a list to the archive", _LIST_ID),
)

# --------------------------------------------------------------------------- spotify

_SPOTIFY = S(
    "spotify",
    "Spotify playback and library control: search, play, queue, playlists, devices and volume.",
    T(
        "searchSpotify",
        "Search for tracks, albums, artists, or playlists on Spotify",
        P("query", description="The search query", required=True),
        P(
            "type",
            description="The type of item to search for",
            required=True,
            enum=("track", "album", "artist", "playlist"),
        ),
        P("limit", "number", "Maximum number of results to return (10-50)", default=10),
    ),
    T("getNowPlaying", "Get information about the currently playing track on Spotify"),
    T(
        "getMyPlaylists",
        "Get a list of the current user's playlists on Spotify",
        P("limit", "number", "Maximum number of playlists to return", default=50),
    ),
    T(
        "getPlaylistTracks",
        "Get a list of tracks in a Spotify playlist",
        P("playlistId", description="The Spotify ID of the playlist", required=True),
        P("limit", "number", "Maximum number of tracks to return", default=50),
    ),
    T(
        "getRecentlyPlayed",
        "Get a list of recently played tracks on Spotify",
        P("limit", "number", "Maximum number of tracks to return", default=50),
    ),
    T(
        "getUsersSavedTracks",
        'Get a list of tracks saved in the user\'s "Liked Songs" library',
        P("limit", "number", "Maximum number of tracks to return (1-50)", default=50),
        P("offset", "number", "Offset for pagination", default=0),
    ),
    T(
        "playMusic",
        "Start playing a Spotify track, album, artist, or playlist",
        P("uri", description="The Spotify URI to play (overrides type and id)"),
        P(
            "type",
            description="The type of item to play",
            enum=("track", "album", "artist", "playlist"),
        ),
        P("id", description="The Spotify ID of the item to play"),
        P("deviceId", description="The Spotify device ID to play on"),
    ),
    T(
        "pausePlayback",
        "Pause Spotify playback on the active device",
        P("deviceId", description="The Spotify device ID"),
    ),
    T(
        "resumePlayback",
        "Resume Spotify playback on the active device",
        P("deviceId", description="The Spotify device ID"),
    ),
    T(
        "skipToNext",
        "Skip to the next track in the current Spotify playback queue",
        P("deviceId", description="The Spotify device ID"),
    ),
    T(
        "skipToPrevious",
        "Skip to the previous track in the current Spotify playback queue",
        P("deviceId", description="The Spotify device ID"),
    ),
    T(
        "addToQueue",
        "Adds a track, album, artist or playlist to the playback queue",
        P("uri", description="The Spotify URI to add"),
        P("type", description="The type of item", enum=("track", "album", "artist", "playlist")),
        P("id", description="The Spotify ID of the item"),
    ),
    T(
        "createPlaylist",
        "Create a new playlist on Spotify",
        P("name", description="The name of the playlist", required=True),
        P("description", description="The description of the playlist"),
        P("public", "boolean", "Whether the playlist should be public", default=False),
    ),
    T(
        "addTracksToPlaylist",
        "Add tracks to a Spotify playlist",
        P("playlistId", description="The Spotify ID of the playlist", required=True),
        P("trackIds", "array", "Array of Spotify track IDs to add", required=True, items="string"),
        P("position", "number", "Position to insert the tracks (0-based index)"),
    ),
    T("getAvailableDevices", "Get information about the user's available Spotify Connect devices"),
    T(
        "setVolume",
        "Set the playback volume to a specific percentage (requires Spotify Premium)",
        P("volumePercent", "number", "The volume to set (0-100)", required=True),
        P("deviceId", description="The Spotify device ID"),
    ),
)

# --------------------------------------------------------------------------- shop (customers / orders data)

_ORDER_ID = P("order_id", description="Order ID, e.g. '10482'", required=True)
_CUSTOMER_ID = P("customer_id", description="Customer ID", required=True)

_SHOP = S(
    "shop",
    "Internal e-commerce data service: customers, orders, products, inventory, shipments and sales reports.",
    T(
        "search_customers",
        "Search customers by name, email, phone or city. Returns matching customer records with IDs.",
        P("query", description="Free text matched against name, email and phone", required=True),
        P("limit", "integer", "Maximum number of customers to return", default=20),
    ),
    T(
        "get_customer",
        "Get a customer's full profile: contact details, addresses, lifetime value and loyalty tier.",
        _CUSTOMER_ID,
    ),
    T(
        "list_customer_orders",
        "List the orders placed by one customer, newest first.",
        _CUSTOMER_ID,
        P(
            "status",
            description="Only orders in this status",
            enum=("pending", "paid", "shipped", "delivered", "cancelled", "refunded"),
        ),
        P("limit", "integer", "Maximum number of orders", default=20),
    ),
    T(
        "list_orders",
        "List orders across the store with optional filters on status, date range and customer.",
        P(
            "status",
            description="Filter by order status",
            enum=("pending", "paid", "shipped", "delivered", "cancelled", "refunded"),
        ),
        P("created_after", description="Only orders created after this date (YYYY-MM-DD)"),
        P("created_before", description="Only orders created before this date (YYYY-MM-DD)"),
        P("customer_id", description="Only orders of this customer"),
        P("limit", "integer", "Maximum number of orders", default=50),
    ),
    T(
        "get_order",
        "Get one order with its line items, totals, payment and shipping status.",
        _ORDER_ID,
    ),
    T(
        "create_order",
        "Create a new order for a customer from a list of product SKUs and quantities.",
        _CUSTOMER_ID,
        P(
            "items",
            "array",
            "Line items, each with 'sku' and 'quantity'",
            required=True,
            items="object",
        ),
        P(
            "shipping_address_id",
            description="Address to ship to; defaults to the customer's primary address",
        ),
        P("discount_code", description="Optional discount code to apply"),
    ),
    T(
        "update_order_status",
        "Change the fulfilment status of an order.",
        _ORDER_ID,
        P(
            "status",
            description="New status",
            required=True,
            enum=("pending", "paid", "shipped", "delivered", "cancelled"),
        ),
        P("note", description="Internal note stored with the status change"),
    ),
    T(
        "cancel_order",
        "Cancel an order that has not shipped yet and release its reserved stock.",
        _ORDER_ID,
        P("reason", description="Cancellation reason"),
        P("notify_customer", "boolean", "Email the customer about the cancellation", default=True),
    ),
    T(
        "refund_order",
        "Refund an order in full or for selected line items; restocks returned items.",
        _ORDER_ID,
        P("amount", "number", "Amount to refund; defaults to the order total"),
        P("line_item_ids", "array", "Only refund these line items", items="string"),
        P("restock", "boolean", "Put the refunded items back into inventory", default=True),
    ),
    T(
        "apply_discount_code",
        "Apply a discount or promo code to an open order and recompute its totals.",
        _ORDER_ID,
        P("code", description="The discount code", required=True),
    ),
    T(
        "list_products",
        "List products in the catalog, optionally filtered by category or text.",
        P("category", description="Category slug"),
        P("query", description="Text to match in product name or SKU"),
        P("limit", "integer", "Maximum number of products", default=50),
    ),
    T(
        "get_product",
        "Get a product by SKU, with price, description, variants and stock per warehouse.",
        P("sku", description="Product SKU", required=True),
    ),
    T(
        "update_inventory",
        "Set or adjust the stock level of a product in a warehouse.",
        P("sku", description="Product SKU", required=True),
        P("warehouse", description="Warehouse code", default="main"),
        P("quantity", "integer", "New absolute quantity"),
        P("delta", "integer", "Relative adjustment, e.g. -3 or +10"),
    ),
    T(
        "get_low_stock_products",
        "List products whose stock is at or below their reorder threshold.",
        P("warehouse", description="Warehouse code; all warehouses when omitted"),
        P("threshold", "integer", "Override the per-product reorder threshold"),
    ),
    T(
        "get_shipment_tracking",
        "Get carrier, tracking number and delivery events for an order's shipment.",
        _ORDER_ID,
    ),
    T(
        "get_sales_report",
        "Aggregate revenue, order count and average order value over a date range, grouped by day, week, month, product or category.",
        P("start_date", description="First day, YYYY-MM-DD", required=True),
        P("end_date", description="Last day, YYYY-MM-DD", required=True),
        P(
            "group_by",
            description="Grouping",
            enum=("day", "week", "month", "product", "category"),
            default="day",
        ),
    ),
)

# --------------------------------------------------------------------------- catalog

SERVERS: tuple[ServerSpec, ...] = (
    _FILESYSTEM,
    _GIT,
    _GITHUB,
    _GITLAB,
    _JIRA,
    _LINEAR,
    _GCAL,
    _GMAIL,
    _SLACK,
    _POSTGRES,
    _SQLITE,
    _MONGODB,
    _PLAYWRIGHT,
    _PUPPETEER,
    _FETCH,
    _BRAVE,
    _NOTION,
    _GDRIVE,
    _STRIPE,
    _S3,
    _K8S,
    _DOCKER,
    _SENTRY,
    _MEMORY,
    _WEATHER,
    _MAPS,
    _TIME,
    _TODOIST,
    _TRELLO,
    _SPOTIFY,
    _SHOP,
)

# --------------------------------------------------------------------------- queries

QUERIES: tuple[Query, ...] = (
    # filesystem
    Q(
        "what's in the top level of my local ~/projects/app folder",
        ("filesystem", "list_directory"),
        ("filesystem", "list_directory_with_sizes"),
    ),
    Q("rename the local file notes.txt to archive/notes-2023.txt", ("filesystem", "move_file")),
    Q("find every .log file under /var/app, including subfolders", ("filesystem", "search_files")),
    Q(
        "when was config.yaml last modified and how big is it on disk",
        ("filesystem", "get_file_info"),
    ),
    Q(
        "replace a couple of lines in settings.py and show me the resulting diff",
        ("filesystem", "edit_file"),
    ),
    Q("which paths on disk am I permitted to touch", ("filesystem", "list_allowed_directories")),
    Q("load README.md, CHANGELOG.md and LICENSE in one go", ("filesystem", "read_multiple_files")),
    Q("nested JSON outline of a project's folders", ("filesystem", "directory_tree")),
    # git
    Q("what files changed but are not staged yet", ("git", "git_diff_unstaged")),
    Q("show what I'm about to commit", ("git", "git_diff_staged")),
    Q("undo git add for everything", ("git", "git_reset")),
    Q("last 5 commits in the local repository", ("git", "git_log")),
    Q("start a new local branch feature/login off develop", ("git", "git_create_branch")),
    Q("switch my working copy over to the release branch", ("git", "git_checkout")),
    Q("git working tree status", ("git", "git_status")),
    # github
    Q(
        "open a pull request on GitHub from my feature branch into main",
        ("github", "create_pull_request"),
    ),
    Q("approve PR #42 on GitHub", ("github", "create_pull_request_review")),
    Q("squash-merge the GitHub PR once checks pass", ("github", "merge_pull_request")),
    Q(
        "find GitHub projects about rust async runtimes with lots of stars",
        ("github", "search_repositories"),
    ),
    Q("where across GitHub is the function parse_config referenced", ("github", "search_code")),
    Q(
        "why did the GitHub Actions build fail? show me the output of the failing jobs",
        ("github", "get_job_logs"),
    ),
    Q("file a bug in the GitHub repo octocat/hello-world", ("github", "create_issue")),
    Q(
        "newest published version of vercel/next.js on GitHub",
        ("github", "get_latest_release"),
        ("github", "list_releases"),
    ),
    Q("which files does GitHub PR 17 touch", ("github", "get_pull_request_files")),
    Q(
        "manually trigger the deploy.yml GitHub Actions workflow on main",
        ("github", "run_workflow"),
    ),
    Q(
        "what's waiting for me in my GitHub inbox (mentions, review requests)",
        ("github", "list_notifications"),
    ),
    # gitlab
    Q("open a GitLab merge request from hotfix into main", ("gitlab", "create_merge_request")),
    Q("retry the failed GitLab CI pipeline", ("gitlab", "retry_pipeline")),
    Q("show the code changes in GitLab MR !88", ("gitlab", "get_merge_request_diffs")),
    Q("leave a comment on a GitLab issue", ("gitlab", "create_issue_note")),
    Q("gitlab job trace output", ("gitlab", "get_pipeline_job_output")),
    # jira
    Q("move Jira ticket PROJ-123 to In Progress", ("jira", "jira_transition_issue")),
    Q("log 2 hours of time spent on a Jira ticket", ("jira", "jira_add_worklog")),
    Q("JQL: open bugs assigned to me in project PAY", ("jira", "jira_search")),
    Q("what sprints are on Jira board 12", ("jira", "jira_get_sprints_from_board")),
    Q(
        "create a Jira story in the PAY project for the checkout redesign",
        ("jira", "jira_create_issue"),
    ),
    Q("mark PROJ-9 as blocked by PROJ-7 in Jira", ("jira", "jira_create_issue_link")),
    # linear
    Q("create a Linear ticket for the onboarding bug", ("linear", "createIssue")),
    Q("what Linear tickets are assigned to me", ("linear", "listMyIssues")),
    Q("which teams exist in our Linear workspace", ("linear", "listTeams")),
    Q("what's in the current Linear cycle for the platform team", ("linear", "listCycles")),
    # gcal
    Q("schedule a 30 minute meeting with Ana tomorrow at 3pm", ("gcal", "create-event")),
    Q("am I free Thursday afternoon?", ("gcal", "get-freebusy"), ("gcal", "list-events")),
    Q("push my dentist appointment to next week", ("gcal", "update-event")),
    Q("remove the Friday standup from my calendar", ("gcal", "delete-event")),
    Q("accept the invite to the design review", ("gcal", "respond-to-event")),
    Q("what's on my calendar today", ("gcal", "list-events")),
    Q("find the meeting on my calendar about the offsite budget", ("gcal", "search-events")),
    # gmail
    Q("email the quarterly report to finance@acme.com", ("gmail", "send_email")),
    Q("find emails from John about the invoice last month", ("gmail", "search_emails")),
    Q("save the PDF attached to that email to my downloads", ("gmail", "download_attachment")),
    Q("write an email to the landlord but keep it unsent for now", ("gmail", "draft_email")),
    Q(
        "get this message out of my inbox without deleting it",
        ("gmail", "archive_email"),
        ("gmail", "modify_email"),
    ),
    Q("automatically label all incoming mail from github.com", ("gmail", "create_filter")),
    Q("answer the recruiter's email in the same thread", ("gmail", "reply_email")),
    # slack
    Q("send a message to the #deploys channel", ("slack", "slack_post_message")),
    Q(
        "answer under that Slack message rather than in the main channel",
        ("slack", "slack_reply_to_thread"),
    ),
    Q("react with :eyes: to the message", ("slack", "slack_add_reaction")),
    Q("what was said in #incidents over the last hour", ("slack", "slack_get_channel_history")),
    Q("look up the Slack profile of user U024BE7LH", ("slack", "slack_get_user_profile")),
    Q("change what the #release channel header says", ("slack", "slack_set_channel_topic")),
    Q(
        "post the standup reminder in Slack at 9am tomorrow, not now",
        ("slack", "slack_schedule_message"),
    ),
    # postgres / sqlite / mongodb
    Q(
        "run a SELECT against the database",
        ("postgres", "query"),
        ("postgres", "execute_sql"),
        ("sqlite", "read_query"),
    ),
    Q("why is this Postgres query slow? show me its plan", ("postgres", "explain_query")),
    Q("recommend indexes for my postgres workload", ("postgres", "analyze_workload_indexes")),
    Q(
        "check postgres for bloated indexes, vacuum problems and connection usage",
        ("postgres", "analyze_db_health"),
    ),
    Q(
        "columns and types of the users table",
        ("postgres", "get_object_details"),
        ("sqlite", "describe_table"),
    ),
    Q("insert a row into the local sqlite db", ("sqlite", "write_query")),
    Q("record a business insight in the sqlite memo", ("sqlite", "append_insight")),
    Q("which collections are in the analytics mongo database", ("mongodb", "list-collections")),
    Q("group orders by status and sum their totals in MongoDB", ("mongodb", "aggregate")),
    Q("make lookups by email fast on the mongo users collection", ("mongodb", "create-index")),
    Q(
        "most expensive statements on the postgres server according to pg_stat_statements",
        ("postgres", "get_top_queries"),
    ),
    Q("show all tables", ("postgres", "list_objects"), ("sqlite", "list_tables")),
    Q("how many documents in the mongodb events collection have type=click", ("mongodb", "count")),
    Q("mongo documents where status is pending, newest first", ("mongodb", "find")),
    # playwright / puppeteer
    Q(
        "open https://example.com in the browser",
        ("playwright", "browser_navigate"),
        ("puppeteer", "puppeteer_navigate"),
    ),
    Q(
        "capture an image of what the page looks like",
        ("playwright", "browser_take_screenshot"),
        ("puppeteer", "puppeteer_screenshot"),
    ),
    Q(
        "pick 'Canada' from the country dropdown",
        ("playwright", "browser_select_option"),
        ("puppeteer", "puppeteer_select"),
    ),
    Q(
        "run some javascript in the page to read document.title",
        ("playwright", "browser_evaluate"),
        ("puppeteer", "puppeteer_evaluate"),
    ),
    Q("wait until the text 'Order confirmed' shows up", ("playwright", "browser_wait_for")),
    Q(
        "any JavaScript errors logged in the browser devtools?",
        ("playwright", "browser_console_messages"),
    ),
    Q("save the current web page as a PDF", ("playwright", "browser_pdf_save")),
    Q("dismiss the confirm() popup by clicking OK", ("playwright", "browser_handle_dialog")),
    Q("switch to the second browser tab", ("playwright", "browser_tabs")),
    Q(
        "mouse over the profile menu so the submenu appears",
        ("playwright", "browser_hover"),
        ("puppeteer", "puppeteer_hover"),
    ),
    Q(
        "enter my email address into the login field",
        ("playwright", "browser_type"),
        ("playwright", "browser_fill_form"),
        ("puppeteer", "puppeteer_fill"),
    ),
    Q(
        "which XHR calls did the page make after loading",
        ("playwright", "browser_network_requests"),
    ),
    # fetch / brave
    Q("get the contents of this URL as markdown", ("fetch", "fetch")),
    Q("search the web for the pydantic v2 migration guide", ("brave", "brave_web_search")),
    Q(
        "pizza places near Union Square",
        ("brave", "brave_local_search"),
        ("maps", "maps_search_places"),
    ),
    Q("latest headlines about the ECB rate decision", ("brave", "brave_news_search")),
    Q("find images of the Eiffel tower at night on the web", ("brave", "brave_image_search")),
    # notion
    Q(
        "add a paragraph at the bottom of the Notion page",
        ("notion", "notion_append_block_children"),
    ),
    Q("filter the Notion tasks database for status = Done", ("notion", "notion_query_database")),
    Q("create a new page in Notion under Meeting Notes", ("notion", "notion_create_page")),
    Q("leave a remark on a Notion doc for the team", ("notion", "notion_create_comment")),
    Q("find the Notion doc titled Q3 roadmap", ("notion", "notion_search")),
    Q("add a row to the Notion reading-list table", ("notion", "notion_create_database_item")),
    # gdrive
    Q("find the Google Drive spreadsheet named budget 2024", ("gdrive", "gdrive_search")),
    Q("give bob@acme.com edit access to the drive file", ("gdrive", "gdrive_share_file")),
    Q("who can see this Drive document", ("gdrive", "gdrive_list_permissions")),
    Q("read cells A1:D20 from the Google Sheet", ("gdrive", "gsheets_read")),
    Q("put report.pdf into my Google Drive", ("gdrive", "gdrive_upload_file")),
    # stripe
    Q("give the customer their money back for payment pi_3Nx8", ("stripe", "create_refund")),
    Q("how much money is sitting in our Stripe account", ("stripe", "retrieve_balance")),
    Q(
        "generate a shareable checkout link for the Pro plan price",
        ("stripe", "create_payment_link"),
    ),
    Q("stop the customer's monthly Stripe plan", ("stripe", "cancel_subscription")),
    Q("make a 20% off promo for Stripe billing", ("stripe", "create_coupon")),
    Q("respond to a chargeback with evidence", ("stripe", "update_dispute")),
    Q(
        "bill a Stripe customer for 10 hours of consulting",
        ("stripe", "create_invoice"),
        ("stripe", "create_invoice_item"),
    ),
    # s3
    Q("give me a temporary download link for a file in S3", ("s3", "generate_presigned_url")),
    Q("what buckets do we have in AWS", ("s3", "list_buckets")),
    Q("upload a file to the S3 bucket", ("s3", "put_object")),
    Q("list keys under the logs/2024/ prefix in S3", ("s3", "list_objects")),
    Q("size and content type of an S3 object without downloading it", ("s3", "head_object")),
    # k8s
    Q(
        "which pods are crashing in the staging namespace",
        ("k8s", "pods_list_in_namespace"),
        ("k8s", "pods_list"),
    ),
    Q("tail the logs of the api pod", ("k8s", "pods_log")),
    Q("scale the web deployment to 5 replicas", ("k8s", "resources_scale")),
    Q("apply this YAML manifest to the cluster", ("k8s", "resources_create_or_update")),
    Q("recent warning events in the kubernetes cluster", ("k8s", "events_list")),
    Q("which cluster nodes are using the most CPU", ("k8s", "nodes_top")),
    Q("open a shell command inside a running pod", ("k8s", "pods_exec")),
    Q("helm releases installed in prod", ("k8s", "helm_list")),
    # docker
    Q("show docker containers that are currently running", ("docker", "list_containers")),
    Q("spin up a new redis container exposing port 6379", ("docker", "run_container")),
    Q("what has the web docker container been printing", ("docker", "fetch_container_logs")),
    Q("build an image from the Dockerfile in ./app", ("docker", "build_image")),
    Q("docker pull nginx", ("docker", "pull_image")),
    Q("delete an unused docker volume", ("docker", "remove_volume")),
    # sentry
    Q("what's the stack trace for Sentry issue PROJ-4X2", ("sentry", "get_issue_details")),
    Q("mark the Sentry error as resolved", ("sentry", "update_issue")),
    Q(
        "most frequent unresolved errors in production this week",
        ("sentry", "search_issues"),
        ("sentry", "search_events"),
    ),
    Q("when was the last release deployed according to Sentry", ("sentry", "find_releases")),
    Q(
        "ask Sentry's AI for the root cause and a fix for this error",
        ("sentry", "analyze_issue_with_seer"),
    ),
    # memory
    Q(
        "note a new fact about the existing entity Alice: she prefers morning meetings",
        ("memory", "add_observations"),
    ),
    Q(
        "link the person Bob to the project Apollo in the knowledge graph",
        ("memory", "create_relations"),
    ),
    Q(
        "look up what I know about Kubernetes in my memory graph",
        ("memory", "search_nodes"),
        ("memory", "open_nodes"),
    ),
    Q("dump the entire knowledge graph", ("memory", "read_graph")),
    Q("forget everything stored about the entity 'old-laptop'", ("memory", "delete_entities")),
    # weather
    Q(
        "will it rain in Seattle tomorrow",
        ("weather", "get_forecast"),
        ("weather", "get_hourly_forecast"),
    ),
    Q("any severe weather warnings in Texas", ("weather", "get_alerts")),
    Q("how polluted is the air in Delhi right now", ("weather", "get_air_quality")),
    Q("temperature outside in Paris now", ("weather", "get_current_weather")),
    # maps
    Q("driving directions from SFO to Palo Alto", ("maps", "maps_directions")),
    Q("lat/long for 1600 Amphitheatre Parkway", ("maps", "maps_geocode")),
    Q("travel times between our 3 warehouses and 5 stores", ("maps", "maps_distance_matrix")),
    Q("what street address is at 40.7128, -74.0060", ("maps", "maps_reverse_geocode")),
    Q("how high above sea level is Denver", ("maps", "maps_elevation")),
    # time
    Q("what time is it in Tokyo", ("time", "get_current_time"), ("gcal", "get-current-time")),
    Q("9am New York is what time in Berlin", ("time", "convert_time")),
    # todoist
    Q("add 'buy milk' to my Todoist, due tomorrow", ("todoist", "todoist_create_task")),
    Q("tick off the dentist task, it's done", ("todoist", "todoist_complete_task")),
    Q("what's on my to-do list for today", ("todoist", "todoist_get_tasks")),
    # trello
    Q("move the card to the Done column on Trello", ("trello", "move_card")),
    Q("add a card 'Fix login' to the Backlog list on Trello", ("trello", "add_card_to_list")),
    Q("what's been happening on the Trello board lately", ("trello", "get_recent_activity")),
    # spotify
    Q("play Discovery by Daft Punk on Spotify", ("spotify", "playMusic")),
    Q("what song is this", ("spotify", "getNowPlaying")),
    Q("skip this track", ("spotify", "skipToNext")),
    Q("make a new Spotify playlist called Focus", ("spotify", "createPlaylist")),
    Q("turn the music down to 30%", ("spotify", "setVolume")),
    Q("queue up another song after this one", ("spotify", "addToQueue")),
    # shop
    Q("has order #10482 shipped yet", ("shop", "get_shipment_tracking"), ("shop", "get_order")),
    Q(
        "look up the customer with email jane@example.com",
        ("shop", "search_customers"),
        ("stripe", "list_customers"),
    ),
    Q("which products are about to run out of stock", ("shop", "get_low_stock_products")),
    Q(
        "all orders placed by customer 5531",
        ("shop", "list_customer_orders"),
        ("shop", "list_orders"),
    ),
    Q("store revenue by day for last month", ("shop", "get_sales_report")),
    Q("cancel order 7781 before it ships", ("shop", "cancel_order")),
    Q("we received 40 more units of SKU TSHIRT-M, bump the stock", ("shop", "update_inventory")),
)


def _check() -> None:
    """Assert the catalog's size and that every expected (server, tool) pair exists."""
    server_names = [s.name for s in SERVERS]
    assert len(server_names) == len(set(server_names)), "duplicate server names"
    known: set[tuple[str, str]] = set()
    for server in SERVERS:
        names = [t.name for t in server.tools]
        assert len(names) == len(set(names)), f"duplicate tool names in {server.name}"
        known.update((server.name, name) for name in names)
    assert len(known) >= 320, f"only {len(known)} tools"
    assert len(SERVERS) >= 22, f"only {len(SERVERS)} servers"
    assert len(QUERIES) >= 80, f"only {len(QUERIES)} queries"
    texts = [q.text for q in QUERIES]
    assert len(texts) == len(set(texts)), "duplicate query texts"
    for query in QUERIES:
        assert query.expected, f"query without expected tools: {query.text!r}"
        for pair in query.expected:
            assert pair in known, f"unknown expected tool {pair} in {query.text!r}"
    covered = {server for q in QUERIES for server, _ in q.expected}
    missing = set(server_names) - covered
    assert not missing, f"servers without queries: {sorted(missing)}"
