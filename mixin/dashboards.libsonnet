// The Grafana dashboards. Their source is the JSON in dashboards/ (edit it in Grafana, export it,
// save it there: the Go test in dashboards/ lints the generated copies); this file applies _config to
// it: the job variable's selector, tags, refresh, time zone, and the alert thresholds that panels
// draw. A replacement whose text is missing from the source fails the evaluation, so that editing the
// source cannot silently detach a panel from its threshold.
local lib = import 'lib.libsonnet';
local sources = {
  'visitors.json': import 'dashboards/visitors.json',
  'agent-jobs.json': import 'dashboards/agent-jobs.json',
  'exporter-health.json': import 'dashboards/exporter-health.json',
  'feedback-search.json': import 'dashboards/feedback-search.json',
  'assistant.json': import 'dashboards/assistant.json',
  'deployments.json': import 'dashboards/deployments.json',
};

// replace returns s with old replaced by new, failing when s lacks old.
local replace(s, old, new) =
  assert std.length(std.findSubstr(old, s)) > 0 : 'dashboard source lacks %s' % std.manifestJson(old);
  std.strReplace(s, old, new);

// Durations in words, as the dashboards' descriptions write them.
local words(n, unit) = '%d %s%s' % [n, unit, if n == 1 then '' else 's'];
local seconds(s) =
  if s % 3600 == 0 then words(s / 3600, 'hour')
  else if s % 60 == 0 then words(s / 60, 'minute')
  else words(s, 'second');
local percent(x) = lib.num(std.round(x * 1000) / 10) + '%';
local promDuration(d) =
  local units = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
  local u = d[std.length(d) - 1];
  assert std.objectHas(units, u) && std.length(d) > 1 : 'duration %s: want <number><s|m|h|d|w>' % d;
  seconds(std.parseInt(d[0:std.length(d) - 1]) * units[u]);

// mapPanels applies f to every panel, rows' nested panels included.
local mapPanels(panels, f) = [
  f(p) + (if std.objectHas(p, 'panels') then { panels: mapPanels(p.panels, f) } else {})
  for p in panels
];
local titles(panels) = std.flattenArrays([
  [p.title] + (if std.objectHas(p, 'panels') then titles(p.panels) else [])
  for p in panels
]);
// patchPanel applies f to the one panel of dashboard d titled title.
local patchPanel(d, title, f) =
  assert std.count(titles(d.panels), title) == 1 : 'dashboard %s: want one panel titled %s' % [d.uid, title];
  d { panels: mapPanels(super.panels, function(p) if p.title == title then f(p) else p) };

{
  local c = $._config,
  local t = lib.thresholds(c),

  local jobQuery =
    'label_values(mintlify_exporter_build_info%s, job)'
    % (if c.dashboardSelector == '' then '' else '{%s}' % c.dashboardSelector),

  local common(d) = d {
    tags: c.dashboardTags,
    refresh: c.dashboardRefresh,
    timezone: c.dashboardTimezone,
    templating+: {
      list: [
        if v.name == 'job' then v { query: jobQuery, definition: jobQuery } else v
        for v in super.list
      ],
    },
  },

  // Oldest active job age: the red line is MintlifyAgentJobStuck's threshold.
  local agentJobs(d) = patchPanel(d, 'Oldest active job age', function(p) p {
    description: replace(super.description, 'fires above 2 hours', 'fires above %s' % seconds(c.thresholds.agentJobStuckSeconds)),
    fieldConfig+: { defaults+: { thresholds+: { steps: redLine(super.steps, c.thresholds.agentJobStuckSeconds) } } },
  }),

  // redLine sets the value of the red step of a panel's thresholds (or of a field override's).
  local redLine(steps, value) = [
    if std.objectHas(s, 'color') && s.color == 'red' then s { value: value } else s
    for s in steps
  ],

  // Data age: the dashed line is MintlifyAnalyticsRefreshBehindPlan's threshold.
  local exporterHealth(d) = patchPanel(d, 'Age of analytics data', function(p) p {
    description: replace(replace(super.description,
                                 '1.5 x the planned interval + 15 minutes',
                                 '%s x the planned interval + %s' % [t.refreshBehindPlanIntervals, seconds(c.thresholds.refreshBehindPlanSlackSeconds)]),
                         'above the threshold for 15 minutes',
                         'above the threshold for %s' % promDuration(t.refreshBehindPlanFor)),
    targets: [
      if std.endsWith(q.legendFormat, 'alert threshold') then q {
        expr: replace(replace(super.expr,
                              '1.5 * mintlify_analytics_refresh_interval_seconds',
                              '%s * mintlify_analytics_refresh_interval_seconds' % t.refreshBehindPlanIntervals),
                      '} + 900',
                      '} + %s' % t.refreshBehindPlanSlackSeconds),
      } else q
      for q in super.targets
    ],
  }),

  // Oldest pending feedback: the red line is MintlifyFeedbackPendingTooLong's threshold. Worst-rated
  // pages: the cells turn red at MintlifyPageThumbsDownRatioHigh's ratio.
  local feedbackSearch(d) = patchPanel(patchPanel(d, 'Oldest pending feedback age', function(p) p {
    description: replace(super.description, 'fires above 3 days', 'fires above %s' % words(c.thresholds.feedbackPendingDays, 'day')),
    fieldConfig+: { defaults+: { thresholds+: { steps: redLine(super.steps, c.thresholds.feedbackPendingDays * 86400) } } },
  }), 'Worst-rated pages', function(p) p {
    description: replace(super.description, 'Red from 50%: MintlifyPageThumbsDownRatioHigh fires above it with at least 10 votes',
                         'Red from %s: MintlifyPageThumbsDownRatioHigh fires above it with at least %s votes' % [percent(c.thresholds.thumbsDownRatio), t.thumbsDownMinVotes]),
    fieldConfig+: { overrides: [
      o { properties: [
        if q.id == 'thresholds' then q { value+: { steps: redLine(super.steps, c.thresholds.thumbsDownRatio) } } else q
        for q in super.properties
      ] }
      for o in super.overrides
    ] },
  }),

  // Oldest deployment in progress: the red line is MintlifyDeploymentStuck's threshold.
  local deployments(d) = patchPanel(d, 'Oldest deployment in progress', function(p) p {
    description: replace(super.description, 'fires above 30 minutes (the red line), for 5 minutes',
                         'fires above %s (the red line), for %s' % [seconds(c.thresholds.deploymentStuckSeconds), promDuration(t.deploymentStuckFor)]),
    fieldConfig+: { defaults+: { thresholds+: { steps: redLine(super.steps, c.thresholds.deploymentStuckSeconds) } } },
  }),

  // Unanswered ratio: the red line is MintlifyAssistantUnansweredRatioHigh's threshold.
  local assistant(d) = patchPanel(d, 'Unanswered ratio', function(p) p {
    description: replace(super.description, 'fires above 30% (the red line) on window 1d with at least 20 conversations, for 1 hour',
                         'fires above %s (the red line) on window 1d with at least %s conversations, for %s' % [
                           percent(c.thresholds.assistantUnansweredRatio),
                           t.assistantUnansweredMinConversations,
                           promDuration(t.assistantUnansweredFor),
                         ]),
    fieldConfig+: { defaults+: { thresholds+: { steps: redLine(super.steps, c.thresholds.assistantUnansweredRatio) } } },
  }),

  grafanaDashboards+:: {
    'visitors.json': common(sources['visitors.json']),
    'agent-jobs.json': agentJobs(common(sources['agent-jobs.json'])),
    'exporter-health.json': exporterHealth(common(sources['exporter-health.json'])),
    'feedback-search.json': feedbackSearch(common(sources['feedback-search.json'])),
    'assistant.json': assistant(common(sources['assistant.json'])),
    'deployments.json': deployments(common(sources['deployments.json'])),
  },
}
