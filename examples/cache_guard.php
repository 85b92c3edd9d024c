<?php
/*
 * Cache-penetration guard with bloomkit's Redis module (phpredis).
 *
 * The same guard as the PHP design it replaces, which kept a plain Redis
 * string and sent k SETBIT / GETBIT commands per id: here one BF.EXISTS
 * per request (one BF.MADD per thousand ids when loading) does the work,
 * with the filter sized for its error rate by the module.
 *
 *     php examples/cache_guard.php [PORT]   (redis-server with bloomkit.so)
 *
 * Prints what happened and exits 1 if the guard let an existing user down
 * or let through far more than its error rate allows.
 */

const FILTER = 'guard:php:users';
const ERROR_RATE = 0.001;

class Database
{
    public $queries = 0;
    private $rows = [];

    public function __construct(array $ids)
    {
        foreach ($ids as $id) {
            $this->rows[$id] = "user-$id";
        }
    }

    public function find(int $id)
    {
        $this->queries++;
        return $this->rows[$id] ?? null;
    }
}

class Guard
{
    public $blocked = 0;
    private $redis;
    private $db;

    public function __construct(Redis $redis, Database $db)
    {
        $this->redis = $redis;
        $this->db = $db;
    }

    /* Fills the filter with every id that exists. */
    public function load(array $ids): void
    {
        $r = $this->redis->rawCommand('BF.RESERVE', FILTER, ERROR_RATE, max(count($ids), 100));
        if ($r === false && strpos((string)$this->redis->getLastError(), 'item exists') === false) {
            throw new RuntimeException('BF.RESERVE: ' . $this->redis->getLastError());
        }
        $this->redis->clearLastError();
        foreach (array_chunk($ids, 1000) as $chunk) {
            $this->redis->rawCommand('BF.MADD', FILTER, ...$chunk);
        }
    }

    public function getUser(int $id)
    {
        if (!$this->redis->rawCommand('BF.EXISTS', FILTER, $id)) {
            $this->blocked++;
            return null; /* certainly absent: neither cache nor database */
        }
        $cached = $this->redis->get("guard:php:cache:$id");
        if ($cached !== false) {
            return $cached === '' ? null : $cached;
        }
        $row = $this->db->find($id);
        $this->redis->set("guard:php:cache:$id", $row ?? '', $row === null ? 10 : 60);
        return $row;
    }
}

$port = (int)($argv[1] ?? 6379);
$redis = new Redis();
$redis->connect('127.0.0.1', $port);
$redis->del(FILTER);

$existing = range(1, 10000);
$db = new Database($existing);
$guard = new Guard($redis, $db);
$guard->load($existing);

$served = 0;
for ($id = 1; $id <= 10000; $id += 10) {
    if ($guard->getUser($id) !== null) {
        $served++;
    }
}
$before = $db->queries;
$attack = 20000;
for ($id = 1000000; $id < 1000000 + $attack; $id++) {
    $guard->getUser($id);
}
$leaked = $db->queries - $before;
printf("existing users served: %d of 1000\n", $served);
printf("requests for missing ids: %d, blocked by the filter: %d, reached the database: %d\n",
       $attack, $guard->blocked, $leaked);
$ok = $served === 1000 && $leaked <= $attack * ERROR_RATE * 3;
echo $ok ? "guard ok\n" : "guard FAILED\n";
exit($ok ? 0 : 1);
