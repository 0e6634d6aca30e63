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
{
  local t = lib.thresholds($._config) { selector: $._config.exporterSelector },

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
      |||,
      record: 'mintlify:site_unique_visitors:ratio_1w',
      expr: |||
        (
          mintlify_site_unique_visitors{window!="yesterday"}
            /
          (mintlify_site_unique_visitors{window!="yesterday"} offset 1w > 0)
        )
        or
        (
          last_over_time(mintlify_site_unique_visitors{window="yesterday"}[1d])
            /
          (last_over_time(mintlify_site_unique_visitors{window="yesterday"}[1d] offset 1w) > 0)
        )
      |||,
    },
    {
      comment:: |||
        Rise of the AI share since a week earlier (0..1 points), in the same two kinds of series as
        mintlify:site_unique_visitors:ratio_1w: live windows against the same time a week earlier, and
        window="yesterday", the last whole day against the same weekday a week earlier, computed from the
        visitor series (recorded series do not exist for backfilled days).
      |||,
      record: 'mintlify:site_ai_share:change_1w',
      expr: |||
        (
          mintlify:site_ai_share:ratio{window!="yesterday"}
            -
          mintlify:site_ai_share:ratio{window!="yesterday"} offset 1w
        )
        or
        (
          (
            last_over_time(mintlify_site_unique_visitors{traffic="ai",window="yesterday"}[1d])
              / ignoring (traffic)
            (sum without (traffic) (last_over_time(mintlify_site_unique_visitors{traffic=~"human|ai",window="yesterday"}[1d])) > 0)
          )
          -
          (
            last_over_time(mintlify_site_unique_visitors{traffic="ai",window="yesterday"}[1d] offset 1w)
              / ignoring (traffic)
            (sum without (traffic) (last_over_time(mintlify_site_unique_visitors{traffic=~"human|ai",window="yesterday"}[1d] offset 1w)) > 0)
          )
        )
      |||,
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
        Only windows whose walk was attempted: refresh_success is also 0 before the first walk ended,
        and with the analytics budget a window may wait for its first walk (the finished day, walked
        last after midnight; long windows at start when the budget is short) without anything failing.
        refresh_duration_seconds exists once a walk ended. window="yesterday" is exported only 00:00 to
        01:00 local: a failing final-day walk fires after 15m and resolves at 01:00 (RUNBOOK.md).
      |||,
      alert: 'MintlifyVisitorsRefreshFailing',
      expr: |||
        mintlify_visitors_refresh_success == 0
        and on (job, instance, project, window)
        mintlify_visitors_refresh_duration_seconds
      |||,
      'for': t.refreshFailingFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Visitor analytics cannot be refreshed from the Mintlify API.',
        description: oneLine(|||
          The exporter {{ $labels.instance }} keeps failing to refresh unique visitors of project
          {{ $labels.project }} (window {{ $labels.window }}) and is serving its last good data.
        |||),
      },
    },
    {
      comment:: |||
        Refreshes run on the analytics budget's plan, not on scrapes: each project and window has its own
        planned interval (mintlify_visitors_refresh_interval_seconds, 5m to many hours), so staleness is
        judged against that plan. 1.5 intervals leave room for walks planned less often than hourly,
        which may start up to an hour late by design (a 2h plan passes the threshold at 3h15m, while a
        walk an hour late ends by about 3h); the 900 s cover a late or slow walk on a short plan. Plans
        between 1h and 2h whose walk starts the full hour late come close (RUNBOOK.md).
        window="yesterday" has no planned interval and is left out (it is walked once a day); a window
        that has never been refreshed has no timestamp and is left to MintlifyVisitorsRefreshFailing.
      |||,
      alert: 'MintlifyVisitorsRefreshBehindPlan',
      expr: |||
        time() - mintlify_visitors_last_refresh_timestamp_seconds
          > on (job, instance, project, window)
        %(refreshBehindPlanIntervals)s * mintlify_visitors_refresh_interval_seconds + %(refreshBehindPlanSlackSeconds)s # threshold
      ||| % t,
      'for': t.refreshBehindPlanFor,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Visitor analytics served by the exporter are older than their refresh plan allows.',
        description: oneLine(|||
          Unique visitors of project {{ $labels.project }} (window {{ $labels.window }}) on
          {{ $labels.instance }} were last refreshed {{ $value | humanizeDuration }} ago; the plan
          refreshes them every {{ with printf "mintlify_visitors_refresh_interval_seconds{job=%q,instance=%q,project=%q,window=%q}" $labels.job $labels.instance $labels.project $labels.window | query }}{{ . | first | value | humanizeDuration }}{{ else }}(interval no longer exported){{ end }}.
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
          {{ $labels.instance }}: the API key is invalid, revoked or lacks permission, and no data is
          being refreshed.
        |||),
      },
    },
    {
      comment:: |||
        Job endpoints only (create_job, get_job): a 429 from the analytics (visitors) endpoint means the
        organization's shared analytics quota is spent, MintlifyAnalyticsBudgetContended's business.
      |||,
      alert: 'MintlifyAPIRateLimited',
      expr: |||
        sum by (job, instance, endpoint) (
          increase(mintlify_api_requests_total{code="429", endpoint!="visitors"}[%(apiRateLimitedWindow)s]) # threshold
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
        organization's keys; the exporter keeps within --mintlify.analytics-budget, so a 429 means someone
        else spent the quota (or the budget is set above what they leave). for: 0m: a 429 is an event and
        the exporter already reacted (Retry-After, half its budget for an hour). The 1h window keeps the
        alert firing while the budget is halved: it resolves an hour after the last 429.
      |||,
      alert: 'MintlifyAnalyticsBudgetContended',
      expr: |||
        sum by (job, instance) (
          increase(mintlify_api_budget_rejections_total[%(analyticsBudgetContendedWindow)s]) # threshold
        ) > 0
      ||| % t,
      'for': '0m',
      labels: { severity: 'warning' },
      annotations: {
        summary: "The Mintlify analytics API refused requests because the organization's hourly quota was spent.",
        description: oneLine(|||
          The Mintlify analytics API answered 429 Too Many Requests to {{ $value | printf "%.0f" }}
          request(s) from {{ $labels.instance }} in the last hour: the organization's shared quota
          (100 analytics requests an hour) was spent. This exporter sent
          {{ with printf "mintlify_api_budget_spent_requests{job=%q,instance=%q}" $labels.job $labels.instance | query }}{{ . | first | value | printf "%.0f" }}{{ else }}an unknown number of{{ end }}
          analytics requests in the last hour (budget
          {{ with printf "mintlify_api_budget_requests_per_hour{job=%q,instance=%q}" $labels.job $labels.instance | query }}{{ . | first | value | printf "%.0f" }}{{ else }}unknown{{ end }});
          well below 100, other tools or exporters spent the rest of the organization's quota. It runs on
          half its budget for an hour and serves its last good data.
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
        Both visitors comparisons below read mintlify:site_unique_visitors:ratio_1w's two kinds of series:
        live windows at the same time a week earlier, and window="yesterday", whole days, which works
        over backfilled history too (given the scrape target's job and instance labels:
        --backfill.label).
        Known limitation of the live windows: `offset 1w` is 168 absolute hours. With a
        --visitors.timezone that has daylight saving time, for a week after each clock change the hour
        around local midnight compares "today so far" across the wrong midnight (after clocks go
        forward, the first local hour is compared with almost a whole day a week earlier), so the 1d
        window can misfire; for: 30m limits that but does not remove it. Silence that hour or alert on
        window yesterday or 7d: RUNBOOK.md.
      |||,
      alert: 'MintlifyHumanVisitorsDrop',
      expr: |||
        mintlify:site_unique_visitors:ratio_1w{traffic="human"} < %(humanVisitorsDropRatio)s # threshold
        and on (job, instance, project, window, traffic)
        (
          mintlify_site_unique_visitors{traffic="human",window!="yesterday"} offset 1w
          or
          last_over_time(mintlify_site_unique_visitors{traffic="human",window="yesterday"}[1d] offset 1w)
        ) >= %(humanVisitorsDropMinVisitors)s # threshold
      ||| % t,
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
        and on (job, instance, project, window)
        (
          sum without (traffic) (mintlify_site_unique_visitors{traffic=~"human|ai",window!="yesterday"})
          or
          sum without (traffic) (last_over_time(mintlify_site_unique_visitors{traffic=~"human|ai",window="yesterday"}[1d]))
        ) >= %(aiShareSurgeMinVisitors)s # threshold
      ||| % t,
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
