// Helpers shared by the mixin's files.
{
  // num writes a threshold as PromQL and people write it: numbers in their shortest form
  // (0.2, not 0.20000000000000001; 7200, not 7.2e+03), strings (durations) as they are.
  num(x)::
    if !std.isNumber(x) then x
    else if std.floor(x) == x then '%d' % x
    else [s for s in [('%.' + p + 'g') % x for p in std.range(1, 17)] if std.parseJson(s) == x][0],

  // thresholds returns _config.thresholds with every value written by num.
  thresholds(config):: std.mapWithKey(function(_, v) self.num(v), config.thresholds),
}
