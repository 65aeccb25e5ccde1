-- sluice: forget the state of KEYS[1] (core's Reset).
return redis.call('DEL', KEYS[1])
