// The rules of the mixin: the recording rules, then the alerts, in one group (rules in a group run in
// order, so the alerts see the recording rules' results of the same evaluation).
//
// To add an alert: append it to `alerts` below (alert, expr, for, labels.severity, annotations
// summary and description; runbook_url is added from _config.runbookURL), put each of its thresholds
// in _config.thresholds and a row for each in _config.thresholdDocs (config.libsonnet), add a section
// "## <AlertName>" to alerts/RUNBOOK.md and promtool unit tests to alerts/tests/, then run make mixin.
//
// `comment::` (hidden, optional) is written above the rule in the generated YAML.
local lib = import 'lib.libsonnet';
local oneLine(s) = std.join(' ', std.split(std.rstripChars(s, '\n'), '\n'));
// indent indents every line of s but the first by n spaces, to place a block at column n.
local indent(s, n) = std.join('\n' + std.repeat(' ', n), std.split(std.rstripChars(s, '\n'), '\n'));
{
  local t = lib.thresholds($._config) {
    selector: $._config.exporterSelector,
    replicas: std.join(', ', $._config.replicaLabels),
    deploymentSelector: $._config.deploymentFailedSelector,
  },
  // The settled value of a whole day (window="yesterday" series selected by sel, offset off: '' or
  // ' offset 1w') over the last day, whichever replica exported it: per replica the last sample within
  // a day (last_over_time), then the largest over the replicas (max: two replicas export the same value
  // during a handover), preferring the replicas that export the series at that moment. A day's value
  // is exported in the first hour of the next day: after a change of primary, the former primary's
  // samples of the day before are still within the day's range during that hour, and max alone could
  // take them. Backfilled days (one sample at midnight, any instance) are read the same way.
  local lastDay(sel, off='') = |||
    (
      max without (%(replicas)s) (last_over_time(%(sel)s[1d]%(off)s) and %(sel)s%(off)s)
      or
      max without (%(replicas)s) (last_over_time(%(sel)s[1d]%(off)s))
    )
  ||| % { replicas: t.replicas, sel: sel, off: off },
  local yesterday = 'mintlify_site_unique_visitors{window="yesterday"}',
  local aiYesterday = 'mintlify_site_unique_visitors{traffic="ai",window="yesterday"}',
  local bothYesterday = 'mintlify_site_unique_visitors{traffic=~"human|ai",window="yesterday"}',
  local humanYesterday = 'mintlify_site_unique_visitors{traffic="human",window="yesterday"}',

  // Recording rules, prefixed mintlify:.
  recordingRules:: [
    {
      comment:: |||
        Recording rules, prefixed mintlify:.

        AI share of a site's unique visitors: ai / (human + ai), per project and window. 0..1.
        (human + ai) is used rather than the deduplicated total so that the share of the two classes
        always adds up to 1; it is only defined when the site had visitors.
      |||,
      record: 'mintlify:site_ai_share:ratio',
      expr: |||
        mintlify_site_unique_visitors{traffic="ai"}
          / ignoring (traffic)
        (sum without (traffic) (mintlify_site_unique_visitors{traffic=~"human|ai"}) > 0)
      |||,
    },
    {
      comment:: |||
        Unique visitors divided by their value a week earlier, per traffic class, in two kinds of series:
        every live window but "yesterday" against the same time a week earlier (intra-day, so it needs a
        week of live data: backfilled history holds whole days only); and window="yesterday", the last
        whole day against the same weekday a week earlier, read with last_over_time over a day because a
        day's settled value is a sample in the first hour of the next day (live, from 00:10 local) or at
        its midnight (backfilled): that one works over backfilled history from the first day.
        Both sides are taken whichever replica exported them: with replicas sharing a Redis only the
        primary exports the visitor series, and its instance (and pod) changes with every rollout, so
        the replica labels (_config.replicaLabels: instance, pod) are aggregated away with max (during
        a handover two replicas export the same value) and the series has no instance label. The two
        sides match on every other label (no on (...)), so that other target labels (namespace, ...)
        are kept; backfilled days match with any instance, given the target's other labels (job). For
        window="yesterday" the replicas exporting the series at that moment are preferred: in the hour
        a day's value is exported, the former primary's value of the day before is still within the
        day's range after a change of primary, and max alone could take it.
      |||,
      record: 'mintlify:site_unique_visitors:ratio_1w',
      expr: |||
        (
          max without (%(replicas)s) (mintlify_site_unique_visitors{window!="yesterday"})
            /
          (max without (%(replicas)s) (mintlify_site_unique_visitors{window!="yesterday"} offset 1w) > 0)
        )
        or
        (
          %(now)s
            /
          (%(week)s > 0)
        )
      ||| % t { now: indent(lastDay(yesterday), 2), week: indent(lastDay(yesterday, ' offset 1w'), 2) },
    },
    {
      comment:: |||
        Rise of the AI share since a week earlier (0..1 points), in the same two kinds of series as
        mintlify:site_unique_visitors:ratio_1w: live windows against the same time a week earlier, and
        window="yesterday", the last whole day against the same weekday a week earlier, computed from the
        visitor series (recorded series do not exist for backfilled days). Like it, whichever replica
        exported the data: mintlify:site_ai_share:ratio keeps the instance, the replica labels are
        aggregated away (max) on both sides before subtracting.
      |||,
      record: 'mintlify:site_ai_share:change_1w',
      expr: |||
        (
          max without (%(replicas)s) (mintlify:site_ai_share:ratio{window!="yesterday"})
            -
          max without (%(replicas)s) (mintlify:site_ai_share:ratio{window!="yesterday"} offset 1w)
        )
        or
        (
          (
            %(aiNow)s
              / ignoring (traffic)
            (sum without (traffic) %(bothNow)s > 0)
          )
          -
          (
            %(aiWeek)s
              / ignoring (traffic)
            (sum without (traffic) %(bothWeek)s > 0)
          )
        )
      ||| % t {
        aiNow: indent(lastDay(aiYesterday), 4),
        bothNow: indent(lastDay(bothYesterday), 4),
        aiWeek: indent(lastDay(aiYesterday, ' offset 1w'), 4),
        bothWeek: indent(lastDay(bothYesterday, ' offset 1w'), 4),
      },
    },
    {
      comment:: |||
        Turns of agent jobs that reached each terminal status in the last 24 hours (a job has one turn,
        plus one per follow-up message; per process counters, resets handled by increase()).
      |||,
      record: 'mintlify:agent_jobs_finished:increase1d',
      expr: |||
        sum by (job, instance, project, status) (
          increase(mintlify_agent_jobs_finished_total[1d])
        )
      |||,
    },
    {
      comment:: |||
        Failure ratio of agent job turns over the last 24 hours: failed / (completed + failed). Archived is
        left out because a completed job that is archived later is counted again as archived.
      |||,
      record: 'mintlify:agent_jobs_failure:ratio1d',
      expr: |||
        sum by (job, instance, project) (mintlify:agent_jobs_finished:increase1d{status="failed"})
          /
        (sum by (job, instance, project) (mintlify:agent_jobs_finished:increase1d{status=~"completed|failed"}) > 0)
      |||,
    },
    {
      comment:: |||
        Deployments of the documentation followed by the gateway (--web.enable-deployment-api): the time
        of the rule's evaluation while a deployment of the project and kind was seen ending with the status
        within the last 2 minutes (increase() over 2m: two scrapes at 30s to 1m). Its last value over a
        range is when the last one was seen, which orders a failure and a success of the same project and
        kind: the API's endedAt of a failure is not exported, the two counters are what both statuses share.
        Whichever replica counted it: the gateway moves between replicas, and a success seen by one must
        clear a failure seen by another, so the replica labels (_config.replicaLabels) are aggregated away.
      |||,
      record: 'mintlify:deployments_finished:seen_timestamp',
      expr: |||
        timestamp(
          sum without (%(replicas)s) (increase(mintlify_deployments_finished_total[2m])) > 0
        )
      ||| % t,
    },
    {
      comment:: |||
        The static exports' twin of mintlify:deployments_finished:seen_timestamp: the evaluation's time
        while an export was seen ending (completed or failed) within 2m, per project and status, whichever
        replica counted it.
      |||,
      record: 'mintlify:static_exports_finished:seen_timestamp',
      expr: |||
        timestamp(
          sum without (%(replicas)s) (increase(mintlify_static_exports_finished_total[2m])) > 0
        )
      ||| % t,
    },
    {
      comment:: |||
        Share of the AI assistant's turns (questions) left unanswered: unanswered / every resolution, per
        project and window. 0..1; only defined when there were turns. The denominator is the sum
        of the resolutions, so that a resolution the API adds later is counted rather than dropped.
      |||,
      record: 'mintlify:assistant_unanswered:ratio',
      expr: |||
        mintlify_assistant_turns_by_resolution{resolution="unanswered"}
          / ignoring (resolution)
        (sum without (resolution) (mintlify_assistant_turns_by_resolution) > 0)
      |||,
    },
    {
      comment:: |||
        Thumbs votes of a page: thumbs_up + thumbs_down, per project, window and path (code snippet
        feedback is not a vote). Only pages of the feedback list (the 100 with the most feedback).
      |||,
      record: 'mintlify:page_feedback_votes:sum',
      expr: |||
        sum without (kind) (mintlify_page_feedback{kind=~"thumbs_up|thumbs_down"})
      |||,
    },
    {
      comment:: |||
        Thumbs-down ratio of a page: thumbs_down / (thumbs_up + thumbs_down), per project, window and
        path. 0..1; only defined for pages with at least one vote.
      |||,
      record: 'mintlify:page_feedback_thumbs_down:ratio',
      expr: |||
        mintlify_page_feedback{kind="thumbs_down"}
          / ignoring (kind)
        (mintlify:page_feedback_votes:sum > 0)
      |||,
    },
  ],

  alerts:: [
    {
      comment:: |||
        Alerts. They are in the same group as the recording rules they use, after them, so that they
        see those rules' results of the same evaluation (rules in a group run in order).
      |||,
      alert: 'MintlifyExporterDown',
      expr: |||
        up{%(selector)s} == 0
        or
        (up == 0 and on (job, instance) last_over_time(mintlify_exporter_build_info[1d]))
      ||| % t,
      'for': t.exporterDownFor,
      labels: { severity: 'critical' },
      annotations: {
        summary: 'The Mintlify exporter cannot be scraped.',
        description: oneLine(|||
          Prometheus keeps failing to scrape {{ $labels.instance }} (job {{ $labels.job }}): no
          Mintlify metric from it is current and every other Mintlify alert about it is blind.
        |||),
      },
    },
    {
      comment:: |||
        One series per demand: project, source (visitors, views, feedback, feedback_items, searches,
        assistant), window and scope (pages: a full walk; site: the totals-only walk of visitors and
        views, planned more often). Only demands whose walk was attempted: refresh_success is also 0
        before the first walk ended, and with the analytics budget a demand may wait for its first walk
        (the finished day, walked last after midnight; long windows and slow sources at start when the
        budget is short) without anything failing. refresh_duration_seconds exists once a walk ended.
        window="yesterday" is exported only 00:00 to 01:00 local: a failing final-day walk fires after
        15m and resolves at 01:00 (RUNBOOK.md).
      |||,
      alert: 'MintlifyAnalyticsRefreshFailing',
      expr: |||
        mintlify_analytics_refresh_success == 0
        and on (job, instance, project, source, window, scope)
        mintlify_analytics_refresh_duration_seconds
      |||,
      'for': t.refreshFailingFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Analytics of a Mintlify project cannot be refreshed from the Mintlify API.',
        description: oneLine(|||
          The exporter {{ $labels.instance }} keeps failing to refresh the {{ $labels.source }} data of
          project {{ $labels.project }} (window {{ $labels.window }}, scope {{ $labels.scope }}) and is
          serving its last good data.
        |||),
      },
    },
    {
      comment:: |||
        Refreshes run on each organization's analytics budget plan, not on scrapes: each demand (project,
        source, window, scope) has its own planned interval (mintlify_analytics_refresh_interval_seconds,
        5m to many hours), so staleness is judged against that plan. 1.5 intervals leave room for walks
        planned less often than hourly, which may start up to an hour late by design (a 2h plan passes
        the threshold at 3h15m, while a walk an hour late ends by about 3h); the 900 s cover a late or
        slow walk on a short plan. Plans between 1h and 2h whose walk starts the full hour late come
        close (RUNBOOK.md). window="yesterday" has no planned interval and is left out (it is walked
        once a day); a demand that has never been refreshed has no timestamp and is left to
        MintlifyAnalyticsRefreshFailing.
      |||,
      alert: 'MintlifyAnalyticsRefreshBehindPlan',
      expr: |||
        time() - mintlify_analytics_last_refresh_timestamp_seconds
          > on (job, instance, project, source, window, scope)
        %(refreshBehindPlanIntervals)s * mintlify_analytics_refresh_interval_seconds + %(refreshBehindPlanSlackSeconds)s # threshold
      ||| % t,
      'for': t.refreshBehindPlanFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Analytics served by the exporter are older than their refresh plan allows.',
        description: oneLine(|||
          The {{ $labels.source }} data of project {{ $labels.project }} (window {{ $labels.window }},
          scope {{ $labels.scope }}) on {{ $labels.instance }} was last refreshed
          {{ $value | humanizeDuration }} ago; the plan refreshes it every {{ with printf "mintlify_analytics_refresh_interval_seconds{job=%q,instance=%q,project=%q,source=%q,window=%q,scope=%q}" $labels.job $labels.instance $labels.project $labels.source $labels.window $labels.scope | query }}{{ . | first | value | humanizeDuration }}{{ else }}(interval no longer exported){{ end }}.
        |||),
      },
    },
    {
      comment:: |||
        A failed reload (SIGHUP or POST /-/reload) changes nothing: the previous configuration keeps
        running, and the gauge stays 0 until a reload succeeds. for: gives whoever is editing the file a
        few minutes to fix a typo and reload again.
      |||,
      alert: 'MintlifyConfigReloadFailed',
      expr: |||
        mintlify_exporter_config_last_reload_successful == 0
      |||,
      'for': t.configReloadFailedFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'The exporter could not reload its configuration file and runs the previous one.',
        description: oneLine(|||
          The last configuration reload of {{ $labels.instance }} (job {{ $labels.job }}) failed: changes
          to the configuration file since the last successful load
          ({{ with printf "mintlify_exporter_config_last_reload_success_timestamp_seconds{job=%q,instance=%q}" $labels.job $labels.instance | query }}{{ . | first | value | humanizeTimestamp }}{{ else }}time unknown{{ end }})
          are not in effect, and a restart would fail on the same error.
        |||),
      },
    },
    {
      alert: 'MintlifyAPIKeyRejected',
      expr: |||
        sum by (job, instance, endpoint) (
          increase(mintlify_api_requests_total{code=~"401|403"}[%(apiKeyRejectedWindow)s]) # threshold
        ) > 0
      ||| % t,
      'for': t.apiKeyRejectedFor,
      labels: { severity: 'critical' },
      annotations: {
        summary: "The Mintlify API rejects the exporter's API key.",
        description: oneLine(|||
          The Mintlify API keeps answering 401 or 403 to {{ $labels.endpoint }} requests from
          {{ $labels.instance }}: the API key is invalid, expired, revoked or lacks permission, and no
          data is being refreshed.
        |||),
      },
    },
    {
      comment:: |||
        The API does not tell when a key expires (an expired key answers 401, and
        MintlifyAPIKeyRejected fires): mintlify_api_key_expiry_timestamp_seconds is the date the
        configuration gives (api_key_expires, --mintlify.api-key-expires), absent for an organization
        without one, which this alert then cannot see. Every replica exports its own configuration's
        date: the replica labels (_config.replicaLabels) are aggregated away with min, so one alert per
        organization and job, on the earliest date any replica has (a replica not reloaded after a
        rotation keeps it firing, rightly). It keeps firing after the date has passed, until the date
        is changed by a reload. The date moves only with a reload, so for: 1h costs nothing against two
        weeks' notice and lets a mistyped date be fixed without a notification; a scrape gap longer
        than the 5m lookback resolves it (MintlifyExporterDown fires then) and it fires again an hour
        after scrapes resume.
      |||,
      alert: 'MintlifyAPIKeyExpiresSoon',
      expr: |||
        min without (%(replicas)s) (mintlify_api_key_expiry_timestamp_seconds)
          < time() + %(apiKeyExpiresSoonDays)s * 86400 # threshold
      ||| % t,
      'for': t.apiKeyExpiresSoonFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A Mintlify API key used by the exporter expires soon.',
        description: oneLine(|||
          The Mintlify API key of organization {{ $labels.organization }} (job {{ $labels.job }}) expires
          on {{ $value | humanizeTimestamp }}, according to the exporter's configuration: from then on
          the API answers 401 and no data is refreshed or job tracked. Give the exporter a new key and its
          expiry date before then.
        |||),
      },
    },
    {
      comment:: |||
        Job endpoints only (create_job, get_job, send_message): a 429 from an analytics endpoint (visitors,
        views, feedback, searches, assistant, ...) means the organization's shared analytics quota is
        spent, MintlifyAnalyticsBudgetContended's business.
      |||,
      alert: 'MintlifyAPIRateLimited',
      expr: |||
        sum by (job, instance, endpoint) (
          increase(mintlify_api_requests_total{code="429", endpoint=~"create_job|get_job|send_message"}[%(apiRateLimitedWindow)s]) # threshold
        ) > 0
      ||| % t,
      'for': t.apiRateLimitedFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: "The Mintlify API is rate limiting the exporter's agent job requests.",
        description: oneLine(|||
          The Mintlify API keeps answering 429 Too Many Requests to {{ $labels.endpoint }} requests
          from {{ $labels.instance }}.
        |||),
      },
    },
    {
      comment:: |||
        The analytics API allows 100 requests per organization per hour, shared by every tool using the
        organization's keys; the exporter keeps each organization within its budget, so a 429 means
        someone else spent the quota (or the budget is set above what they leave). One alert per
        organization: each has its own quota and budget. for: 0m: a 429 is an event and the exporter
        already reacted (Retry-After, half the organization's budget for an hour). The 1h window keeps
        the alert firing while the budget is halved: it resolves an hour after the last 429.
      |||,
      alert: 'MintlifyAnalyticsBudgetContended',
      expr: |||
        sum by (job, instance, organization) (
          increase(mintlify_api_budget_rejections_total[%(analyticsBudgetContendedWindow)s]) # threshold
        ) > 0
      ||| % t,
      'for': '0m',
      labels: { severity: 'warning' },
      annotations: {
        summary: "The Mintlify analytics API refused requests because the organization's hourly quota was spent.",
        description: oneLine(|||
          The Mintlify analytics API answered 429 Too Many Requests to {{ $value | printf "%.0f" }}
          request(s) of organization {{ $labels.organization }} from {{ $labels.instance }} in the last
          hour: the organization's shared quota (100 analytics requests an hour) was spent. This exporter
          sent
          {{ with printf "mintlify_api_budget_spent_requests{job=%q,instance=%q,organization=%q}" $labels.job $labels.instance $labels.organization | query }}{{ . | first | value | printf "%.0f" }}{{ else }}an unknown number of{{ end }}
          analytics requests for it in the last hour (budget
          {{ with printf "mintlify_api_budget_requests_per_hour{job=%q,instance=%q,organization=%q}" $labels.job $labels.instance $labels.organization | query }}{{ . | first | value | printf "%.0f" }}{{ else }}unknown{{ end }});
          well below 100, other tools or exporters spent the rest of the organization's quota. It runs on
          half that budget for an hour and serves its last good data.
        |||),
      },
    },
    {
      comment:: |||
        The 5m window is shorter than for: so that a burst of errors ages out of it before the alert
        fires: a 2-minute outage keeps the share above 0.5 for about 7 minutes, even on a quiet site
        whose recovery adds one request per cache TTL. The volume guard (>= 10 requests in the window)
        keeps an endpoint that sends a handful of requests (a quiet site sends 1-2 visitors requests per
        5m, 3 when a refresh needs all its attempts) from firing on a few failed attempts, while a
        sustained outage clears it: a failing refresh is retried every 30s with 3 attempts, about 30
        requests per 5m.
      |||,
      alert: 'MintlifyAPIErrors',
      expr: |||
        sum by (job, instance, endpoint) (increase(mintlify_api_requests_total{code=~"5..|error"}[%(apiErrorsWindow)s])) # threshold
          /
        (sum by (job, instance, endpoint) (increase(mintlify_api_requests_total[%(apiErrorsWindow)s])) >= %(apiErrorsMinRequests)s) # threshold
          > %(apiErrorsRatio)s # threshold
      ||| % t,
      'for': t.apiErrorsFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Most requests to the Mintlify API fail with server or transport errors.',
        description: oneLine(|||
          {{ $value | humanizePercentage }} of {{ $labels.endpoint }} requests from
          {{ $labels.instance }} to the Mintlify API recently ended in a 5xx status or a transport
          error.
        |||),
      },
    },
    {
      alert: 'MintlifyAgentJobFailed',
      expr: |||
        sum by (job, instance, project) (
          increase(mintlify_agent_jobs_finished_total{status="failed"}[%(agentJobFailedWindow)s]) # threshold
        ) > 0
      ||| % t,
      'for': '0m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A Mintlify agent job failed.',
        description: oneLine(|||
          At least one agent job of project {{ $labels.project }} tracked by {{ $labels.instance }}
          has just finished with status failed.
        |||),
      },
    },
    {
      alert: 'MintlifyAgentJobStuck',
      expr: |||
        mintlify_agent_job_oldest_active_age_seconds > %(agentJobStuckSeconds)s # threshold
      ||| % t,
      'for': t.agentJobStuckFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A Mintlify agent job has been active for too long.',
        description: oneLine(|||
          The oldest running turn of an agent job of project {{ $labels.project }} tracked by
          {{ $labels.instance }} has been running for {{ $value | humanizeDuration }}.
        |||),
      },
    },
    {
      alert: 'MintlifyAgentPollsLagging',
      expr: |||
        max by (job, instance) (mintlify_agent_poll_max_overdue_seconds)
          > on (job, instance)
        %(agentPollsLaggingIntervals)s * mintlify_agent_poll_interval_seconds # threshold
      ||| % t,
      'for': t.agentPollsLaggingFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'The exporter polls its agent jobs later than its poll interval promises.',
        description: oneLine(|||
          A scheduled poll of an agent job tracked by {{ $labels.instance }} (job {{ $labels.job }}) is
          {{ $value | humanizeDuration }} overdue: too many jobs to poll for --agent.max-concurrent-polls,
          so statuses, turns and durations are seen late.
        |||),
      },
    },
    {
      alert: 'MintlifyAgentJobFailureRatioHigh',
      expr: |||
        mintlify:agent_jobs_failure:ratio1d > %(agentJobFailureRatio)s # threshold
        and on (job, instance, project)
        sum by (job, instance, project) (mintlify:agent_jobs_finished:increase1d{status=~"completed|failed"}) >= %(agentJobFailureMinJobs)s # threshold
      ||| % t,
      'for': t.agentJobFailureRatioFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Too many Mintlify agent jobs fail.',
        description: oneLine(|||
          {{ $value | humanizePercentage }} of the agent jobs of project {{ $labels.project }} that
          completed or failed in the last 24 hours failed (tracked by {{ $labels.instance }}).
        |||),
      },
    },
    {
      alert: 'MintlifyAgentStateWriteFailing',
      expr: |||
        sum by (job, instance) (
          increase(mintlify_agent_state_write_errors_total[%(agentStateWriteWindow)s]) # threshold
        ) > 0
      ||| % t,
      'for': t.agentStateWriteFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'The exporter cannot write its agent state file.',
        description: oneLine(|||
          The exporter {{ $labels.instance }} (job {{ $labels.job }}) keeps failing to write its agent
          state file: agent jobs submitted meanwhile are tracked in memory only and status changes are
          not recorded, so a restart now would lose track of them.
        |||),
      },
    },
    {
      comment:: |||
        Deployments are seen only when they were triggered or handed over (track) through the gateway: the
        API lists none, so one started from the Mintlify dashboard or by the GitHub app is invisible.
        Fires while the last deployment of a project and kind seen ending was a failure, for the kinds
        _config.deploymentFailedSelector selects (kind="update", the production docs, by default: a failed
        preview is news for the pull request whose CI triggered it). It resolves when a success of the same
        project and kind is seen after it, or 24h after the failure without one (the dashboard's time since
        the last success still shows it). The order is that of mintlify:deployments_finished:seen_timestamp:
        a failure and a success seen in the same evaluation count as the failure last, so it fires and the
        next success resolves it. for: 0m: a failed deployment is an event, waiting adds nothing. No
        instance label: the gateway moves between replicas.
      |||,
      alert: 'MintlifyDeploymentFailed',
      expr: |||
        max without (status) (
          max_over_time(mintlify:deployments_finished:seen_timestamp{status="failure",%(deploymentSelector)s}[%(deploymentFailedLookback)s]) # threshold
        )
          unless
        max without (status) (
          max_over_time(mintlify:deployments_finished:seen_timestamp{status="success"}[%(deploymentFailedLookback)s]) # threshold
            > ignoring (status)
          max_over_time(mintlify:deployments_finished:seen_timestamp{status="failure"}[%(deploymentFailedLookback)s]) # threshold
        )
      ||| % t,
      'for': '0m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A deployment of the documentation failed and none has succeeded since.',
        description: oneLine(|||
          The last {{ $labels.kind }} deployment of project {{ $labels.project }} followed by job
          {{ $labels.job }} failed (seen by {{ $value | humanizeTimestamp }}) and none has succeeded since:
          its changes are not live.
          {{ with printf "max(mintlify_deployment_last_success_timestamp_seconds{job=%q,project=%q,kind=%q}) > 0" $labels.job $labels.project $labels.kind | query }}The last successful one ended {{ . | first | value | humanizeTimestamp }}.{{ else }}The exporter knows of no successful one.{{ end }}
        |||),
      },
    },
    {
      comment:: |||
        The age of the oldest deployment of a project and kind that is queued or in progress (from the
        API's createdAt; a status the API documents nowhere counts too), whichever replica follows it.
        Documentation builds take minutes: 30 minutes is longer than any should, a long queue included.
        for: 5m: a deployment that ended just past the threshold is seen ending at the next poll or two
        (polls back off while it is queued) without firing. Both kinds: whoever waits for a stuck preview
        (a CI pipeline polling the gateway) waits until its own timeout.
      |||,
      alert: 'MintlifyDeploymentStuck',
      expr: |||
        max without (%(replicas)s) (mintlify_deployment_oldest_in_progress_age_seconds) > %(deploymentStuckSeconds)s # threshold
      ||| % t,
      'for': t.deploymentStuckFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A deployment of the documentation has been queued or in progress for too long.',
        description: oneLine(|||
          The oldest {{ $labels.kind }} deployment of project {{ $labels.project }} followed by job
          {{ $labels.job }} has been queued or in progress for {{ $value | humanizeDuration }}
          ({{ with printf "max(mintlify_deployments_in_progress{job=%q,project=%q,kind=%q})" $labels.job $labels.project $labels.kind | query }}{{ . | first | value | printf "%.0f" }}{{ else }}an unknown number{{ end }}
          queued or in progress now).
        |||),
      },
    },
    {
      comment:: |||
        Static exports started or handed over through the gateway (issue 36): fires while the last export
        of a project seen ending failed, until a completed one is seen after it or the lookback passes, as
        MintlifyDeploymentFailed. for: 0m: a failed export is an event.
      |||,
      alert: 'MintlifyStaticExportFailed',
      expr: |||
        max without (status) (
          max_over_time(mintlify:static_exports_finished:seen_timestamp{status="failed"}[%(staticExportFailedLookback)s]) # threshold
        )
          unless
        max without (status) (
          max_over_time(mintlify:static_exports_finished:seen_timestamp{status="completed"}[%(staticExportFailedLookback)s]) # threshold
            > ignoring (status)
          max_over_time(mintlify:static_exports_finished:seen_timestamp{status="failed"}[%(staticExportFailedLookback)s]) # threshold
        )
      ||| % t,
      'for': '0m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A static export of the documentation failed and none has completed since.',
        description: oneLine(|||
          The last static export of project {{ $labels.project }} followed by job {{ $labels.job }} failed
          (seen by {{ $value | humanizeTimestamp }}) and none has completed since. Its error is in
          GET /api/v1/static-export/{{ $labels.project }}/jobs?status=failed.
        |||),
      },
    },
    {
      comment:: |||
        The age of the oldest static export of a project queued or running (from the API's createdAt),
        whichever replica follows it. The sandbox's take a minute; an hour is longer than a large site's
        should. for: 5m: one that ended just past the threshold is seen at the next poll.
      |||,
      alert: 'MintlifyStaticExportStuck',
      expr: |||
        max without (%(replicas)s) (mintlify_static_export_oldest_in_progress_age_seconds) > %(staticExportStuckSeconds)s # threshold
      ||| % t,
      'for': t.staticExportStuckFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'A static export has been queued or running for too long.',
        description: oneLine(|||
          The oldest static export of project {{ $labels.project }} followed by job {{ $labels.job }} has been
          queued or running for {{ $value | humanizeDuration }}.
        |||),
      },
    },
    {
      comment:: |||
        Both visitors comparisons below read mintlify:site_unique_visitors:ratio_1w's two kinds of series:
        live windows at the same time a week earlier, and window="yesterday", whole days, which works
        over backfilled history too (given the scrape target's job label: --backfill.label). Like the
        recording rules, they compare the data whichever replica exported it (the replica labels,
        _config.replicaLabels, aggregated away), so a change of primary (a rollout) between the week
        earlier and now hides nothing; the alerts carry no instance label.
        Known limitation of the live windows: `offset 1w` is 168 absolute hours. With a
        --analytics.timezone that has daylight saving time, for a week after each clock change the hour
        around local midnight compares "today so far" across the wrong midnight (after clocks go
        forward, the first local hour is compared with almost a whole day a week earlier), so the 1d
        window can misfire; for: 30m limits that but does not remove it. Silence that hour or alert on
        window yesterday or 7d: RUNBOOK.md.
      |||,
      alert: 'MintlifyHumanVisitorsDrop',
      expr: |||
        mintlify:site_unique_visitors:ratio_1w{traffic="human"} < %(humanVisitorsDropRatio)s # threshold
        and on (job, project, window, traffic)
        (
          max without (%(replicas)s) (mintlify_site_unique_visitors{traffic="human",window!="yesterday"} offset 1w)
          or
          %(humanWeek)s
        ) >= %(humanVisitorsDropMinVisitors)s # threshold
      ||| % t { humanWeek: indent(lastDay(humanYesterday, ' offset 1w'), 2) },
      'for': t.humanVisitorsDropFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Human visitors of the documentation dropped sharply compared with a week earlier.',
        description: oneLine(|||
          Human unique visitors of project {{ $labels.project }} (window {{ $labels.window }}) are at
          {{ $value | humanizePercentage }} of their value a week earlier (at the same time of day; for
          window yesterday, on the same weekday).
        |||),
      },
    },
    {
      comment:: |||
        Same daylight saving time limitation as MintlifyHumanVisitorsDrop (see the comment above it), for
        the live windows.
      |||,
      alert: 'MintlifyAITrafficShareSurge',
      expr: |||
        mintlify:site_ai_share:change_1w > %(aiShareSurgePoints)s # threshold
        and on (job, project, window)
        (
          sum without (traffic) (max without (%(replicas)s) (mintlify_site_unique_visitors{traffic=~"human|ai",window!="yesterday"}))
          or
          sum without (traffic) %(bothNow)s
        ) >= %(aiShareSurgeMinVisitors)s # threshold
      ||| % t { bothNow: indent(lastDay(bothYesterday), 2) },
      'for': t.aiShareSurgeFor,
      labels: { severity: 'info' },
      annotations: {
        summary: 'The share of AI traffic among visitors of the documentation surged compared with a week earlier.',
        description: oneLine(|||
          The AI share of unique visitors of project {{ $labels.project }} (window
          {{ $labels.window }}) is {{ $value | humanizePercentage }} points higher than a week earlier (at
          the same time of day; for window yesterday, on the same weekday).
        |||),
      },
    },
    {
      comment:: |||
        Window 1d is today so far (local day of the exporter's configuration): the volume guard keeps
        the first turns after midnight from firing it, and for: 1h a burst of unanswered
        questions. It resolves when the day's ratio falls back, or at midnight when the new day has too
        few turns. Nothing fires without the assistant source at window 1d.
      |||,
      alert: 'MintlifyAssistantUnansweredRatioHigh',
      expr: |||
        mintlify:assistant_unanswered:ratio{window="1d"} > %(assistantUnansweredRatio)s # threshold
        and on (job, instance, project, window)
        sum without (resolution) (mintlify_assistant_turns_by_resolution{window="1d"}) >= %(assistantUnansweredMinConversations)s # threshold
      ||| % t,
      'for': t.assistantUnansweredFor,
      labels: { severity: 'info' },
      annotations: {
        summary: 'The AI assistant of the documentation leaves many questions unanswered today.',
        description: oneLine(|||
          {{ $value | humanizePercentage }} of today's questions (turns) to the AI assistant of project
          {{ $labels.project }} were left unanswered (window {{ $labels.window }},
          {{ with printf "sum(mintlify_assistant_turns_by_resolution{job=%q,instance=%q,project=%q,window=%q})" $labels.job $labels.instance $labels.project $labels.window | query }}{{ . | first | value | printf "%.0f" }}{{ else }}an unknown number of{{ end }}
          turns, seen by {{ $labels.instance }}).
        |||),
      },
    },
    {
      comment:: |||
        The age is as of the last walk of feedback_items, among the items created in its widest window:
        an item older than that window is not seen, so the threshold must be below it (3 days with
        windows 1d and 7d).
      |||,
      alert: 'MintlifyFeedbackPendingTooLong',
      expr: |||
        mintlify_feedback_oldest_pending_age_seconds > %(feedbackPendingDays)s * 86400 # threshold
      ||| % t,
      'for': t.feedbackPendingFor,
      labels: { severity: 'info' },
      annotations: {
        summary: 'Feedback on the documentation has been waiting for triage too long.',
        description: oneLine(|||
          The oldest feedback item of project {{ $labels.project }} still pending triage is
          {{ $value | humanizeDuration }} old (seen by {{ $labels.instance }}).
        |||),
      },
    },
    {
      comment:: |||
        Window 7d: a week of votes is enough to judge a page, and does not restart at midnight. The
        volume guard keeps a page with a few votes from firing on two thumbs down. Only pages of the
        feedback list (the 100 with the most feedback) are seen.
      |||,
      alert: 'MintlifyPageThumbsDownRatioHigh',
      expr: |||
        mintlify:page_feedback_thumbs_down:ratio{window="7d"} > %(thumbsDownRatio)s # threshold
        and on (job, instance, project, window, path)
        mintlify:page_feedback_votes:sum{window="7d"} >= %(thumbsDownMinVotes)s # threshold
      ||| % t,
      'for': t.thumbsDownFor,
      labels: { severity: 'info' },
      annotations: {
        summary: 'Readers thumb down a documentation page more often than up.',
        description: oneLine(|||
          {{ $value | humanizePercentage }} of the thumbs votes on page {{ $labels.path }} of project
          {{ $labels.project }} in window {{ $labels.window }} were thumbs down
          ({{ with printf "mintlify:page_feedback_votes:sum{job=%q,instance=%q,project=%q,window=%q,path=%q}" $labels.job $labels.instance $labels.project $labels.window $labels.path | query }}{{ . | first | value | printf "%.0f" }}{{ else }}an unknown number of{{ end }}
          votes, seen by {{ $labels.instance }}).
        |||),
      },
    },
    {
      comment:: |||
        A gauge of creates that wait for an operator: it only falls when each is tracked or dismissed
        (GET/DELETE /api/v2/agent/{project}/unknown-creates), so the alert resolves when they are handled.
      |||,
      alert: 'MintlifyAgentCreateOutcomeUnknown',
      expr: |||
        max by (job, instance, project) (mintlify_agent_create_unknown_outcomes) > 0
      |||,
      'for': t.agentCreateUnknownFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Agent job creates of unknown outcome may have started jobs that nobody tracks.',
        description: oneLine(|||
          {{ $value }} job create(s) of project {{ $labels.project }} on {{ $labels.instance }} were
          sent to the Mintlify API without a recorded answer: the jobs may run untracked. List them with
          GET /api/v2/agent/{{ $labels.project }}/unknown-creates, then track or dismiss each.
        |||),
      },
    },
    {
      comment:: |||
        The deployments' twin of MintlifyAgentCreateOutcomeUnknown: a gauge of triggers that wait for an
        operator (GET /api/v1/project/{project}/unknown-triggers), which falls when each is followed
        (track ?intent=) or dismissed, so the alert resolves when they are handled. Exported by the
        replica running the gateway only, hence without the replica labels.
      |||,
      alert: 'MintlifyDeploymentOutcomeUnknown',
      expr: |||
        max without (%(replicas)s) (mintlify_deployment_unknown_outcomes) > 0
      ||| % t,
      'for': t.deploymentUnknownFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Deployment triggers of unknown outcome may have started deployments that nobody follows.',
        description: oneLine(|||
          {{ $value }} {{ $labels.kind }} trigger(s) of project {{ $labels.project }} (job {{ $labels.job }})
          were sent to the Mintlify API without a recorded answer: deployments may run unfollowed. List them
          with GET /api/v1/project/{{ $labels.project }}/unknown-triggers, then follow or dismiss each.
        |||),
      },
    },
    {
      comment:: |||
        The static exports' twin of MintlifyDeploymentOutcomeUnknown: starts that wait for an operator
        (GET /api/v1/static-export/{project}/unknown-starts), resolved when each is followed (track
        ?intent=) or dismissed.
      |||,
      alert: 'MintlifyStaticExportOutcomeUnknown',
      expr: |||
        max without (%(replicas)s) (mintlify_static_export_unknown_outcomes) > 0
      ||| % t,
      'for': t.staticExportUnknownFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Static export starts of unknown outcome may have started exports that nobody follows.',
        description: oneLine(|||
          {{ $value }} static export start(s) of project {{ $labels.project }} (job {{ $labels.job }}) were sent
          to the Mintlify API without a recorded answer. List them with
          GET /api/v1/static-export/{{ $labels.project }}/unknown-starts, then follow or dismiss each.
        |||),
      },
    },
    {
      comment:: |||
        The automations' twin of MintlifyDeploymentOutcomeUnknown: automation triggers that wait for an
        operator (GET /api/v1/workflow/{project}/unknown-triggers); the gauge falls when each is settled
        (track ?intent=) or dismissed. Exported by the replica running the gateway only.
      |||,
      alert: 'MintlifyAutomationOutcomeUnknown',
      expr: |||
        max without (%(replicas)s) (mintlify_automation_unknown_outcomes) > 0
      ||| % t,
      'for': t.automationUnknownFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Automation triggers of unknown outcome may have queued runs that nobody follows.',
        description: oneLine(|||
          {{ $value }} automation trigger(s) of project {{ $labels.project }} (job {{ $labels.job }})
          were sent to the Mintlify API without a recorded answer: runs may go unfollowed. List them
          with GET /api/v1/workflow/{{ $labels.project }}/unknown-triggers, then follow or dismiss each.
        |||),
      },
    },
    {
      comment:: |||
        Replicas sharing a Redis (the cluster: section). Without one, none of the
        mintlify_exporter_cluster_* series exist and none of these three alerts fires.
        mintlify_exporter_cluster_up is the result of the replica's last call to Redis (it also pings
        it every 5s); for: 5m lets a Redis restart or failover pass. While it is 0 no analytics request
        leaves (the shared ledger cannot pay for it) and leases cannot be renewed. One alert per
        replica: every replica cut off from Redis fires.
      |||,
      alert: 'MintlifyClusterRedisDown',
      expr: |||
        mintlify_exporter_cluster_up == 0
      |||,
      'for': t.clusterRedisDownFor,
      labels: { severity: 'critical' },
      annotations: {
        summary: 'The exporter cannot reach the Redis its replicas share.',
        description: oneLine(|||
          The exporter {{ $labels.instance }} (job {{ $labels.job }}) keeps failing to reach the shared
          Redis: it sends no analytics request (the shared ledger cannot pay for any), serves its last
          data as it ages, and cannot renew its
          leases.{{ with printf "mintlify_exporter_cluster_primary{job=%q,instance=%q} == 1" $labels.job $labels.instance | query }} It
          is the primary and keeps exporting the shared data while it is cut off, beside any replica
          that takes over.{{ end }}
        |||),
      },
    },
    {
      comment:: |||
        The primary (the one holder of the "primary" lease) alone exports the data every replica
        shares: analytics, plan status, budgets. A replica that dies is replaced within one
        cluster.lease_duration (30s by default) of its last renewal, so a job whose replicas reach Redis
        but have no primary for 5m (10 lease durations) is stuck. The value is the number of replicas
        that reach Redis. When no replica reaches Redis, MintlifyClusterRedisDown fires instead.
      |||,
      alert: 'MintlifyClusterNoPrimary',
      expr: |||
        count by (job) (mintlify_exporter_cluster_up == 1)
          and on (job)
        sum by (job) (mintlify_exporter_cluster_primary) == 0
      |||,
      'for': t.clusterNoPrimaryFor,
      labels: { severity: 'critical' },
      annotations: {
        summary: 'No replica of the exporter is the primary, so no analytics data is exported.',
        description: oneLine(|||
          {{ $value | printf "%.0f" }} replica(s) of job {{ $labels.job }} reach the shared Redis but
          none of them is the primary: no replica exports the analytics data, plan status and budgets
          they share, so dashboards and the analytics alerts see none.
        |||),
      },
    },
    {
      comment:: |||
        More than one primary: each exports the shared series, so sums over the job count them
        several times. The usual cause is a replica cut off from Redis: it keeps the role (it cannot
        tell whether another took over) until it reaches Redis again and finds its lease lost, within a
        third of cluster.lease_duration. A handover overlaps for less than that; for: 5m ignores it.
      |||,
      alert: 'MintlifyClusterSeveralPrimaries',
      expr: |||
        sum by (job) (mintlify_exporter_cluster_primary) > 1
      |||,
      'for': t.clusterSeveralPrimariesFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Several replicas of the exporter export the data they share.',
        description: oneLine(|||
          {{ $value | printf "%.0f" }} replicas of job {{ $labels.job }} are primary at once
          ({{ range $i, $s := printf "mintlify_exporter_cluster_primary{job=%q} == 1" $labels.job | query | sortByLabel "instance" }}{{ if $i }}, {{ end }}{{ $s.Labels.instance }}{{ end }}):
          the analytics, plan status and budget series are exported by each, and sums over
          the job count them {{ $value | printf "%.0f" }} times. A replica cut off from Redis keeps the
          role: restore its connection or restart it.
        |||),
      },
    },
    {
      comment:: |||
        The agent job state in Redis lost its data (Redis restarted without persistence, or was
        flushed): every replica refuses the gateway (503) until an operator runs state accept-empty or
        state import. It never ends by itself, so a short for: only skips a scrape's noise.
      |||,
      alert: 'MintlifyAgentStateLost',
      expr: |||
        max by (job) (mintlify_exporter_cluster_agent_state_lost) == 1
      |||,
      'for': t.agentStateLostFor,
      labels: { severity: 'critical' },
      annotations: {
        summary: 'The agent job state in Redis was lost, so the agent job gateway refuses jobs.',
        description: oneLine(|||
          The replicas of job {{ $labels.job }} found the agent job state in their shared Redis lost
          (Redis restarted without its data, or was flushed): acknowledged jobs and Idempotency-Keys are
          gone, and /api/ answers 503 on every replica until an operator runs
          mintlify_exporter state accept-empty or state import FILE.
        |||),
      },
    },
  ],

  // The annotation every alert gets: its section of the runbook.
  local withRunbook(r) =
    if std.objectHas(r, 'alert') then
      r { annotations+: { runbook_url: '%s#%s' % [$._config.runbookURL, std.asciiLower(r.alert)] } }
    else r,

  prometheusAlerts+:: {
    groups+: [{
      name: $._config.ruleGroupName,
      rules: std.map(withRunbook, $.recordingRules + $.alerts),
    }],
  },
}
